package sluicehttp_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

func TestClientKey(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	cases := []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"direct IPv4", "203.0.113.7:5555", nil, "203.0.113.7"},
		{"no port", "203.0.113.7", nil, "203.0.113.7"},
		{"untrusted peer's header ignored", "203.0.113.7:5555", []string{"198.51.100.1"}, "203.0.113.7"},
		{"IPv6 grouped by /64", "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:443", nil, "2001:db8:1:2::/64"},
		{"same /64 same key", "[2001:db8:1:2::1]:443", nil, "2001:db8:1:2::/64"},
		{"IPv6 zone dropped", "[fe80::1%eth0]:443", nil, "fe80::/64"},
		{"IPv4-mapped as IPv4", "[::ffff:203.0.113.7]:80", nil, "203.0.113.7"},
		{"trusted proxy", "10.1.2.3:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"rightmost untrusted hop", "10.1.2.3:80", []string{"1.1.1.1, 198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"repeated headers", "10.1.2.3:80", []string{"1.1.1.1", "198.51.100.1", "10.9.9.9"}, "198.51.100.1"},
		{"client-forged left hops ignored", "10.1.2.3:80", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1"},
		{"trusted IPv6 proxy, mapped client", "[fd00::5]:80", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"forwarded IPv6 grouped", "10.1.2.3:80", []string{"2001:db8:9:9::42"}, "2001:db8:9:9::/64"},
		{"all hops trusted", "10.1.2.3:80", []string{"10.5.5.5, 10.6.6.6"}, "10.5.5.5"},
		{"proxy with no header", "10.1.2.3:80", nil, "10.1.2.3"},
		{"garbage hop", "10.1.2.3:80", []string{"1.1.1.1, not-an-ip"}, sluicehttp.UnknownClient},
		{"no remote address", "", nil, sluicehttp.UnknownClient},
		{"unix socket", "@", nil, sluicehttp.UnknownClient},
		{"unspecified", "0.0.0.0:1", nil, sluicehttp.UnknownClient},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for _, h := range tc.xff {
				r.Header.Add("X-Forwarded-For", h)
			}
			if got := sluicehttp.ClientKey(r, trusted); got != tc.want {
				t.Errorf("ClientKey = %q, want %q", got, tc.want)
			}
		})
	}
}

type httpFixture struct {
	clock   *clock
	limiter *ratelimit.Limiter
	handler http.Handler
	served  int
}

func newHTTP(t *testing.T, cfg sluicehttp.RateLimitConfig, opts ...ratelimit.Option) *httpFixture {
	t.Helper()
	f := &httpFixture{clock: newClock()}
	f.limiter = newLimiter(t, ratelimit.Memory(1000), append([]ratelimit.Option{ratelimit.WithClock(f.clock.Now)}, opts...)...)
	if cfg.Limiter == nil {
		cfg.Limiter = f.limiter
	}
	mw, err := sluicehttp.RateLimit(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.handler = mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.served++ }))
	return f
}

func (f *httpFixture) do(target, remote string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", target, nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	return w
}

func TestMiddlewareHeadersAndDenial(t *testing.T) {
	f := newHTTP(t, sluicehttp.RateLimitConfig{Default: ratelimit.Rule{Window: 10 * time.Second, Max: 2}})
	const ip = "203.0.113.7:1234"
	check := func(w *httptest.ResponseRecorder, status int, headers map[string]string) {
		t.Helper()
		if w.Code != status {
			t.Errorf("status %d, want %d", w.Code, status)
		}
		for k, v := range headers {
			if got := w.Header().Get(k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
	}
	check(f.do("/login?a=1", ip), 200, map[string]string{"RateLimit-Limit": "2", "RateLimit-Remaining": "1", "RateLimit-Reset": "10", "Retry-After": ""})
	f.clock.Set(2500 * time.Millisecond)
	check(f.do("/login?b=2", ip), 200, map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": "8"}) // 7.5 s rounds up
	f.clock.Set(3500 * time.Millisecond)
	w := f.do("/login", ip) // the query is not part of the key
	check(w, 429, map[string]string{"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "7",
		"Retry-After": "7", "X-Retry-After": "7", "Content-Type": "application/json"})
	const want = `{"code":"RATE_LIMITED","message":"Too many requests. Please try again later.","status":429,"retryAfter":7}`
	if got := strings.TrimSpace(w.Body.String()); got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	var body sluicehttp.ErrorBody
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Code != sluicehttp.CodeRateLimited || body.Status != 429 || body.RetryAfter != 7 {
		t.Errorf("body %q decodes to %+v (%v)", w.Body.String(), body, err)
	}
	if f.served != 2 {
		t.Errorf("handler served %d requests, want 2", f.served)
	}
	// Another path and another client have their own buckets.
	check(f.do("/other", ip), 200, nil)
	check(f.do("/login", "198.51.100.1:1"), 200, nil)
	// The path is cleaned: no bypass through "//login/" or "/x/../login".
	check(f.do("//login/", ip), 429, nil)
	check(f.do("/x/../login", ip), 429, nil)
	// Requests with no usable address share one bucket per path.
	check(f.do("/login", ""), 200, nil)
	check(f.do("/login", "@"), 200, nil)
	check(f.do("/login", "garbage"), 429, nil)
	// At the window's end the client is admitted again.
	f.clock.Set(10 * time.Second)
	check(f.do("/login", ip), 200, map[string]string{"RateLimit-Remaining": "1", "RateLimit-Reset": "10"})
}

func TestMiddlewareRulePrecedence(t *testing.T) {
	rule := func(max int64) ratelimit.Rule { return ratelimit.Rule{Window: time.Minute, Max: max} }
	f := newHTTP(t, sluicehttp.RateLimitConfig{
		Default: rule(1),
		Paths: map[string]ratelimit.Rule{
			"/api/*":        rule(2),
			"/api/admin/*":  rule(3),
			"/api/*/export": rule(4), // 12 literal characters beat /api/admin/*'s 11
			"/api/special":  rule(5),
			"/health":       ratelimit.Unlimited,
			"/static/*":     ratelimit.Unlimited,
		},
		RuleFor: func(r *http.Request) (ratelimit.Rule, bool) {
			if r.Header.Get("X-Plan") == "pro" {
				return rule(9), true
			}
			return ratelimit.Rule{}, false
		},
	})
	cases := []struct {
		path  string
		limit string // "" for unlimited
	}{
		{"/", "1"},
		{"/login", "1"},
		{"/api/users", "2"},
		{"/api/admin/users", "3"},
		{"/api/x/export", "4"},
		{"/api/admin/export", "4"},
		{"/api/special", "5"},
		{"/api", "1"},
		{"/health", ""},
		{"/static/app.js", ""},
	}
	for _, tc := range cases {
		w := f.do(tc.path, "203.0.113.7:1")
		if got := w.Header().Get("RateLimit-Limit"); got != tc.limit || w.Code != 200 {
			t.Errorf("%s: status %d, RateLimit-Limit %q, want 200 and %q", tc.path, w.Code, got, tc.limit)
		}
	}
	r := httptest.NewRequest("GET", "/api/special", nil)
	r.Header.Set("X-Plan", "pro")
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	if got := w.Header().Get("RateLimit-Limit"); got != "9" {
		t.Errorf("RuleFor: RateLimit-Limit %q, want 9 (the function comes first)", got)
	}
	// Unlimited paths are served however often.
	for i := 0; i < 5; i++ {
		if w := f.do("/health", "203.0.113.7:1"); w.Code != 200 {
			t.Fatalf("/health request %d: %d", i, w.Code)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"/a/*", "/a/b", true}, {"/a/*", "/a/b/c", true}, {"/a/*", "/a/", true}, {"/a/*", "/a", false},
		{"*", "/anything", true}, {"/a/*/c", "/a/b/c", true}, {"/a/*/c", "/a/b/d", false},
		{"*.js", "/x/y.js", true}, {"/a*b*c", "/abbc", true}, {"/a*b*c", "/acb", false}, {"/a*a", "/a", false},
	}
	for _, tc := range cases {
		if got := sluicehttp.GlobMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestMiddlewareBadConfig(t *testing.T) {
	l := newLimiter(t, ratelimit.Memory(10), ratelimit.WithLongestWindow(time.Hour))
	ok := ratelimit.Rule{Window: time.Minute, Max: 1}
	cases := []struct {
		name string
		cfg  sluicehttp.RateLimitConfig
		want string
	}{
		{"no limiter", sluicehttp.RateLimitConfig{Default: ok}, "RateLimitConfig.Limiter is nil"},
		{"zero limiter", sluicehttp.RateLimitConfig{Limiter: &ratelimit.Limiter{}, Default: ok},
			"RateLimitConfig.Limiter: the Limiter is not initialised"},
		{"no default", sluicehttp.RateLimitConfig{Limiter: l}, "RateLimitConfig.Default is not set"},
		{"bad default", sluicehttp.RateLimitConfig{Limiter: l, Default: ratelimit.Rule{Window: time.Minute, Max: -2}},
			"invalid request: RateLimitConfig.Default: rule max -2 must not be negative"},
		{"bad path rule", sluicehttp.RateLimitConfig{Limiter: l, Default: ok, Paths: map[string]ratelimit.Rule{"/x": {Window: time.Millisecond / 2, Max: 1}}},
			`RateLimitConfig.Paths["/x"]: rule window 500µs is not a whole number of milliseconds`},
		{"relative path", sluicehttp.RateLimitConfig{Limiter: l, Default: ok, Paths: map[string]ratelimit.Rule{"x": ok}},
			`RateLimitConfig.Paths["x"]: a path must start with '/' or '*'`},
		{"window past the longest", sluicehttp.RateLimitConfig{Limiter: l, Default: ratelimit.Rule{Window: 2 * time.Hour, Max: 1}},
			"RateLimitConfig.Default: window 2h0m0s is longer than the limiter's longest window 1h0m0s"},
		{"invalid trusted proxy", sluicehttp.RateLimitConfig{Limiter: l, Default: ok, TrustedProxies: []netip.Prefix{{}}},
			"RateLimitConfig.TrustedProxies[0]: invalid prefix"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mw, err := sluicehttp.RateLimit(tc.cfg)
			if mw != nil || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RateLimit = %v, %v; want nil and ErrInvalid saying %q", mw != nil, err, tc.want)
			}
			if strings.Count(err.Error(), "invalid request") != 1 {
				t.Errorf("err = %v: the prefix repeats", err)
			}
		})
	}
}

func TestMiddlewareStorageFailure(t *testing.T) {
	for _, open := range []bool{false, true} {
		db, _ := core.New(broken{memory.New()})
		var opts []ratelimit.Option
		if open {
			opts = append(opts, ratelimit.WithFailOpen())
		}
		l := newLimiter(t, ratelimit.Database(db), opts...)
		var reported error
		f := newHTTP(t, sluicehttp.RateLimitConfig{Limiter: l, Default: rule3, OnError: func(_ *http.Request, err error) { reported = err }})
		w := f.do("/", "203.0.113.7:1")
		want := http.StatusServiceUnavailable
		if open {
			want = http.StatusOK
		}
		if w.Code != want || !errors.Is(reported, errBroken) {
			t.Errorf("fail open %v: status %d, reported %v; want %d and the storage error", open, w.Code, reported, want)
		}
		if body := `{"code":"RATE_LIMIT_UNAVAILABLE","message":"The rate limiter is unavailable. Please try again later.","status":503}`; !open &&
			(strings.TrimSpace(w.Body.String()) != body || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Retry-After") != "") {
			t.Errorf("fail closed: body %s Content-Type %q Retry-After %q, want %s as JSON and no Retry-After",
				w.Body, w.Header().Get("Content-Type"), w.Header().Get("Retry-After"), body)
		}
		if w.Header().Get("RateLimit-Limit") != "" {
			t.Errorf("fail open %v: rate-limit headers without a decision", open)
		}
	}
}
