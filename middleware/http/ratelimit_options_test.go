package sluicehttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// req is one request for httpFixture.serve.
type req struct {
	target, remote string
	headers        map[string]string
}

func (f *httpFixture) serve(q req) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", q.target, nil)
	r.RemoteAddr = q.remote
	for k, v := range q.headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	return w
}

// codes serves each request in turn and returns their statuses.
func (f *httpFixture) codes(qs ...req) []int {
	var out []int
	for _, q := range qs {
		out = append(out, f.serve(q).Code)
	}
	return out
}

func wantCodes(t *testing.T, what string, got []int, want ...int) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: statuses %v, want %v", what, got, want)
	}
}

var (
	perMinute = func(max int64) ratelimit.Rule { return ratelimit.Rule{Window: time.Minute, Max: max} }
	proxies   = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
)

func TestMiddlewareKey(t *testing.T) {
	errNoUser := errors.New("no user")
	var calls int
	var reported []error
	f := newHTTP(t, sluicehttp.RateLimitConfig{
		Default: perMinute(2),
		Paths:   map[string]ratelimit.Rule{"/login": perMinute(1), "/health": ratelimit.Unlimited},
		Key: func(r *http.Request) (string, error) {
			calls++
			switch u := r.Header.Get("X-User"); u {
			case "nobody":
				return "", errNoUser
			case "blank":
				return "", nil
			default:
				return "user:" + u, nil
			}
		},
		OnError: func(_ *http.Request, err error) { reported = append(reported, err) },
	})
	user := func(path, u, ip string) req { return req{path, ip + ":1", map[string]string{"X-User": u}} }
	// One budget per key and rule, whatever the path or the address.
	wantCodes(t, "alice under the default rule", f.codes(user("/a", "alice", "203.0.113.1"), user("/b", "alice", "198.51.100.1"), user("/c", "alice", "203.0.113.1")), 200, 200, 429)
	wantCodes(t, "bob from alice's address", f.codes(user("/a", "bob", "203.0.113.1")), 200)
	wantCodes(t, "alice under /login's rule", f.codes(user("/login", "alice", "203.0.113.1"), user("/login", "alice", "203.0.113.1")), 200, 429)
	// Odd characters are fine: the middleware stores SafeKey of the key.
	wantCodes(t, "a key with NUL", f.codes(user("/a", "x\x00y", "203.0.113.1")), 200)
	// Unlimited paths never ask Key.
	before := calls
	wantCodes(t, "unlimited path", f.codes(user("/health", "nobody", "203.0.113.1")), 200)
	if calls != before {
		t.Errorf("Key called %d times for an unlimited path", calls-before)
	}
	if f.served != 6 {
		t.Fatalf("served %d, want 6", f.served)
	}
	// A failing or empty key is refused, never let through.
	for _, u := range []string{"nobody", "blank"} {
		reported = nil
		w := f.serve(user("/a", u, "203.0.113.1"))
		const body = `{"code":"RATE_LIMIT_KEY_FAILED","message":"The request could not be identified for rate limiting.","status":500}`
		if w.Code != 500 || strings.TrimSpace(w.Body.String()) != body || w.Header().Get("RateLimit-Limit") != "" {
			t.Errorf("Key %s: %d %s %v, want 500 %s and no rate-limit header", u, w.Code, w.Body, w.Header(), body)
		}
		if len(reported) != 1 || !strings.Contains(reported[0].Error(), "RateLimitConfig.Key") || (u == "nobody" && !errors.Is(reported[0], errNoUser)) {
			t.Errorf("Key %s: OnError got %v, want one error naming RateLimitConfig.Key (wrapping Key's)", u, reported)
		}
	}
	if f.served != 6 {
		t.Errorf("served %d after Key failures, want still 6", f.served)
	}
}

// TestMiddlewareKeyRoutePattern keys by ServeMux's pattern: every user id
// of one route shares the client's budget.
func TestMiddlewareKeyRoutePattern(t *testing.T) {
	c := newClock()
	l := newLimiter(t, ratelimit.Memory(100), ratelimit.WithClock(c.Now))
	cfg := sluicehttp.RateLimitConfig{Limiter: l, Default: perMinute(2), TrustedProxies: proxies, ClientIPHeader: "X-Real-IP"}
	cfg.Key = func(r *http.Request) (string, error) { return cfg.ClientKey(r) + "|" + r.Pattern, nil }
	mw, err := sluicehttp.RateLimit(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	mux.Handle("GET /users/{id}", mw(ok))
	mux.Handle("GET /orders/{id}", mw(ok))
	var got []int
	for _, p := range []string{"/users/1", "/users/2", "/users/3", "/orders/1"} {
		r := httptest.NewRequest("GET", p, nil)
		r.RemoteAddr = "10.0.0.1:1"
		r.Header.Set("X-Real-IP", "198.51.100.9")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		got = append(got, w.Code)
	}
	wantCodes(t, "by route pattern", got, 200, 200, 429, 200)
}

func TestRateLimitConfigClientKey(t *testing.T) {
	cfg := sluicehttp.RateLimitConfig{TrustedProxies: proxies, ClientIPHeader: "CF-Connecting-IP"}
	cases := []struct {
		name, remote string
		headers      map[string]string
		want         string
	}{
		{"trusted peer's header believed", "10.1.1.1:1", map[string]string{"Cf-Connecting-Ip": "198.51.100.1"}, "198.51.100.1"},
		{"untrusted peer's header ignored", "203.0.113.7:1", map[string]string{"CF-Connecting-IP": "198.51.100.1"}, "203.0.113.7"},
		{"X-Forwarded-For ignored when a header is named", "10.1.1.1:1", map[string]string{"X-Forwarded-For": "6.6.6.6", "CF-Connecting-IP": "198.51.100.1"}, "198.51.100.1"},
		{"trusted peer without the header", "10.1.1.1:1", map[string]string{"X-Forwarded-For": "6.6.6.6"}, "10.1.1.1"},
		{"the last value wins", "10.1.1.1:1", map[string]string{"CF-Connecting-IP": "6.6.6.6, 198.51.100.1"}, "198.51.100.1"},
		{"IPv6 grouped", "10.1.1.1:1", map[string]string{"CF-Connecting-IP": "2001:db8:1:2::9"}, "2001:db8:1:2::/64"},
		{"garbage", "10.1.1.1:1", map[string]string{"CF-Connecting-IP": "nonsense"}, sluicehttp.UnknownClient},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		if got := cfg.ClientKey(r); got != tc.want {
			t.Errorf("%s: ClientKey = %q, want %q", tc.name, got, tc.want)
		}
	}
	// Repeated header lines: the last, written by the nearest proxy.
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.1.1.1:1"
	r.Header.Add("CF-Connecting-IP", "6.6.6.6")
	r.Header.Add("CF-Connecting-IP", "198.51.100.2")
	if got := cfg.ClientKey(r); got != "198.51.100.2" {
		t.Errorf("repeated header: %q, want the last line's address", got)
	}
	// Without a named header, the config reads X-Forwarded-For as ClientKey does.
	cfg.ClientIPHeader = ""
	r.Header.Set("X-Forwarded-For", "6.6.6.6, 198.51.100.3")
	if got, want := cfg.ClientKey(r), sluicehttp.ClientKey(r, proxies); got != want || got != "198.51.100.3" {
		t.Errorf("X-Forwarded-For: config %q, ClientKey %q, want 198.51.100.3", got, want)
	}
	// Prefix lengths.
	cfg = sluicehttp.RateLimitConfig{IPv4Prefix: 24, IPv6Prefix: 128}
	for remote, want := range map[string]string{"203.0.113.7:1": "203.0.113.0/24", "[2001:db8::1]:1": "2001:db8::1/128"} {
		r.RemoteAddr = remote
		if got := cfg.ClientKey(r); got != want {
			t.Errorf("prefixes 24/128, %s: %q, want %q", remote, got, want)
		}
	}
}

// TestMiddlewareClientIPHeaderSpoofing: a client that rotates the named
// header is still one client unless its peer is a trusted proxy.
func TestMiddlewareClientIPHeaderSpoofing(t *testing.T) {
	f := newHTTP(t, sluicehttp.RateLimitConfig{Default: perMinute(1), TrustedProxies: proxies, ClientIPHeader: "X-Real-IP"})
	spoof := func(ip string) req { return req{"/", "203.0.113.7:1", map[string]string{"X-Real-IP": ip}} }
	wantCodes(t, "untrusted peer rotating X-Real-IP", f.codes(spoof("198.51.100.1"), spoof("198.51.100.2"), spoof("198.51.100.3")), 200, 429, 429)
	via := func(proxy, ip string) req { return req{"/", proxy + ":1", map[string]string{"X-Real-IP": ip}} }
	wantCodes(t, "through proxies", f.codes(via("10.0.0.1", "198.51.100.1"), via("10.0.0.2", "198.51.100.1"), via("10.0.0.1", "198.51.100.2")), 200, 429, 200)
}

func TestMiddlewarePrefixes(t *testing.T) {
	at := func(ip string) req { return req{"/", ip, nil} }
	f := newHTTP(t, sluicehttp.RateLimitConfig{Default: perMinute(1), IPv4Prefix: 24, IPv6Prefix: 48})
	wantCodes(t, "IPv4 /24", f.codes(at("203.0.113.7:1"), at("203.0.113.200:1"), at("203.0.114.7:1")), 200, 429, 200)
	wantCodes(t, "IPv6 /48", f.codes(at("[2001:db8:1:2::1]:1"), at("[2001:db8:1:ffff::1]:1"), at("[2001:db8:2::1]:1")), 200, 429, 200)
	// The defaults are unchanged: IPv4 /32, IPv6 /64.
	f = newHTTP(t, sluicehttp.RateLimitConfig{Default: perMinute(1)})
	wantCodes(t, "default IPv4", f.codes(at("203.0.113.7:1"), at("203.0.113.8:1")), 200, 200)
	wantCodes(t, "default IPv6", f.codes(at("[2001:db8:1:2::1]:1"), at("[2001:db8:1:2::2]:1"), at("[2001:db8:1:3::1]:1")), 200, 429, 200)
}

func TestMiddlewareExemptClients(t *testing.T) {
	exempt := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("::ffff:198.18.0.0/111")}
	for _, header := range []string{"", "X-Real-IP"} {
		t.Run("header="+header, func(t *testing.T) {
			f := newHTTP(t, sluicehttp.RateLimitConfig{Default: perMinute(1), TrustedProxies: proxies, ClientIPHeader: header, ExemptClients: exempt})
			direct := req{"/", "192.0.2.5:1", nil}
			w := f.serve(direct)
			wantCodes(t, "exempt client", append([]int{w.Code}, f.codes(direct, direct, req{"/", "198.18.0.1:1", nil}, req{"/", "198.18.0.1:1", nil})...), 200, 200, 200, 200, 200)
			if w.Header().Get("RateLimit-Limit") != "" {
				t.Errorf("exempt response carries rate-limit headers: %v", w.Header())
			}
			// A client cannot exempt itself with a header.
			claim := "X-Forwarded-For"
			if header != "" {
				claim = header
			}
			spoof := req{"/", "203.0.113.7:1", map[string]string{claim: "192.0.2.5"}}
			wantCodes(t, "untrusted peer claiming an exempt address", f.codes(spoof, spoof), 200, 429)
			// Through a trusted proxy, the address the proxy wrote counts.
			viaProxy := req{"/", "10.0.0.1:1", map[string]string{claim: "192.0.2.5"}}
			wantCodes(t, "exempt client through a proxy", f.codes(viaProxy, viaProxy), 200, 200)
			if header == "" {
				forged := req{"/", "10.0.0.1:1", map[string]string{claim: "192.0.2.5, 198.51.100.1"}}
				wantCodes(t, "forged left hop through a proxy", f.codes(forged, forged), 200, 429)
			}
		})
	}
}

func TestMiddlewareSkip(t *testing.T) {
	var keyCalls int
	f := newHTTP(t, sluicehttp.RateLimitConfig{
		Default: perMinute(1),
		Skip:    func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/internal/") },
		Key:     func(*http.Request) (string, error) { keyCalls++; return "k", nil },
	})
	in := req{"/internal/metrics", "203.0.113.7:1", nil}
	w := f.serve(in)
	wantCodes(t, "skipped", append([]int{w.Code}, f.codes(in, in)...), 200, 200, 200)
	if keyCalls != 0 || w.Header().Get("RateLimit-Limit") != "" {
		t.Errorf("skipped requests: Key called %d times, headers %v; want neither", keyCalls, w.Header())
	}
	out := req{"/public", "203.0.113.7:1", nil}
	wantCodes(t, "not skipped", f.codes(out, out), 200, 429)
}

func TestMiddlewareOnDenied(t *testing.T) {
	for _, style := range []sluicehttp.HeaderStyle{sluicehttp.HeadersDefault, sluicehttp.HeadersNone} {
		var seen []http.Header
		var decisions []ratelimit.Decision
		f := newHTTP(t, sluicehttp.RateLimitConfig{
			Default: ratelimit.Rule{Window: 10 * time.Second, Max: 1},
			Headers: style,
			OnDenied: func(w http.ResponseWriter, r *http.Request, d ratelimit.Decision) {
				seen = append(seen, w.Header().Clone())
				decisions = append(decisions, d)
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, "slow down")
			},
		})
		f.serve(req{"/", "203.0.113.7:1", nil})
		f.clock.Set(3 * time.Second)
		w := f.serve(req{"/", "203.0.113.7:1", nil})
		if w.Code != 503 || w.Body.String() != "slow down" || len(decisions) != 1 {
			t.Fatalf("%v: %d %q after %d calls, want the custom answer once", style, w.Code, w.Body, len(decisions))
		}
		if d := decisions[0]; d.Allowed || d.Limit != 1 || d.Remaining != 0 || d.RetryAfter != 7*time.Second {
			t.Errorf("%v: decision %+v", style, d)
		}
		want := http.Header{"Ratelimit-Limit": {"1"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"7"}, "Retry-After": {"7"}, "X-Retry-After": {"7"}}
		if style == sluicehttp.HeadersNone {
			want = http.Header{}
		}
		if !reflect.DeepEqual(seen[0], want) {
			t.Errorf("%v: headers when OnDenied ran %v, want %v", style, seen[0], want)
		}
	}
}

func TestMiddlewareHeaderStyles(t *testing.T) {
	cases := []struct {
		style          sluicehttp.HeaderStyle
		allowed, final http.Header
	}{
		{sluicehttp.HeadersDefault,
			http.Header{"Ratelimit-Limit": {"2"}, "Ratelimit-Remaining": {"1"}, "Ratelimit-Reset": {"30"}},
			http.Header{"Ratelimit-Limit": {"2"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"28"}, "Retry-After": {"28"}, "X-Retry-After": {"28"}}},
		{sluicehttp.HeadersIETF,
			http.Header{"Ratelimit-Policy": {`"default";q=2;w=30`}, "Ratelimit": {`"default";r=1;t=30`}},
			http.Header{"Ratelimit-Policy": {`"default";q=2;w=30`}, "Ratelimit": {`"default";r=0;t=28`}, "Retry-After": {"28"}}},
		{sluicehttp.HeadersLegacy,
			http.Header{"X-Ratelimit-Limit": {"2"}, "X-Ratelimit-Remaining": {"1"}, "X-Ratelimit-Reset": {fmt.Sprint(t0.Unix() + 30)}},
			http.Header{"X-Ratelimit-Limit": {"2"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {fmt.Sprint(t0.Unix() + 30)}, "Retry-After": {"28"}}},
		{sluicehttp.HeadersNone, http.Header{}, http.Header{}},
	}
	for _, tc := range cases {
		t.Run(tc.style.String(), func(t *testing.T) {
			f := newHTTP(t, sluicehttp.RateLimitConfig{Default: ratelimit.Rule{Window: 30 * time.Second, Max: 2}, Headers: tc.style})
			w := f.serve(req{"/", "203.0.113.7:1", nil})
			if w.Code != 200 || !reflect.DeepEqual(w.Header(), tc.allowed) {
				t.Errorf("allowed: %d %v, want 200 %v", w.Code, w.Header(), tc.allowed)
			}
			f.clock.Set(1500 * time.Millisecond)
			f.serve(req{"/", "203.0.113.7:1", nil})
			f.clock.Set(2500 * time.Millisecond)
			w = f.serve(req{"/", "203.0.113.7:1", nil})
			want := tc.final.Clone()
			want.Set("Content-Type", "application/json")
			if w.Code != 429 || !reflect.DeepEqual(w.Header(), want) {
				t.Errorf("denied: %d %v, want 429 %v", w.Code, w.Header(), want)
			}
			if !strings.Contains(w.Body.String(), `"retryAfter":28`) {
				t.Errorf("denied body %s", w.Body)
			}
		})
	}
}

func TestMiddlewareBadOptions(t *testing.T) {
	l := newLimiter(t, ratelimit.Memory(10))
	ok := perMinute(1)
	base := func(edit func(*sluicehttp.RateLimitConfig)) sluicehttp.RateLimitConfig {
		c := sluicehttp.RateLimitConfig{Limiter: l, Default: ok}
		edit(&c)
		return c
	}
	cases := []struct {
		name string
		cfg  sluicehttp.RateLimitConfig
		want string
	}{
		{"header without proxies", base(func(c *sluicehttp.RateLimitConfig) { c.ClientIPHeader = "X-Real-IP" }),
			`RateLimitConfig.ClientIPHeader "X-Real-IP" is set but TrustedProxies is empty`},
		{"header not a name", base(func(c *sluicehttp.RateLimitConfig) { c.ClientIPHeader = "X Real IP"; c.TrustedProxies = proxies }),
			`RateLimitConfig.ClientIPHeader "X Real IP" is not a header name`},
		{"X-Forwarded-For named", base(func(c *sluicehttp.RateLimitConfig) { c.ClientIPHeader = "x-forwarded-for"; c.TrustedProxies = proxies }),
			`RateLimitConfig.ClientIPHeader "x-forwarded-for": leave it empty`},
		{"IPv4 prefix too long", base(func(c *sluicehttp.RateLimitConfig) { c.IPv4Prefix = 33 }), "RateLimitConfig.IPv4Prefix 33 is not between 1 and 32"},
		{"IPv4 prefix negative", base(func(c *sluicehttp.RateLimitConfig) { c.IPv4Prefix = -1 }), "RateLimitConfig.IPv4Prefix -1 is not between 1 and 32"},
		{"IPv6 prefix too long", base(func(c *sluicehttp.RateLimitConfig) { c.IPv6Prefix = 129 }), "RateLimitConfig.IPv6Prefix 129 is not between 1 and 128"},
		{"unknown style", base(func(c *sluicehttp.RateLimitConfig) { c.Headers = 9 }), "RateLimitConfig.Headers HeaderStyle(9) is not one of"},
		{"invalid exempt prefix", base(func(c *sluicehttp.RateLimitConfig) { c.ExemptClients = []netip.Prefix{proxies[0], {}} }),
			"RateLimitConfig.ExemptClients[1]: invalid prefix"},
		{"exempt prefix spanning mapped space", base(func(c *sluicehttp.RateLimitConfig) {
			c.ExemptClients = []netip.Prefix{netip.MustParsePrefix("::ffff:0:0/95")}
		}), "RateLimitConfig.ExemptClients[0]: prefix ::ffff:0.0.0.0/95 spans IPv4-mapped addresses"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mw, err := sluicehttp.RateLimit(tc.cfg)
			if mw != nil || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "sluicehttp: invalid request: "+tc.want) {
				t.Fatalf("RateLimit = %v, %v; want nil and ErrInvalid saying %q", mw != nil, err, tc.want)
			}
		})
	}
	// The limits of the ranges are accepted.
	for _, c := range []sluicehttp.RateLimitConfig{
		base(func(c *sluicehttp.RateLimitConfig) { c.IPv4Prefix, c.IPv6Prefix = 1, 1 }),
		base(func(c *sluicehttp.RateLimitConfig) { c.IPv4Prefix, c.IPv6Prefix = 32, 128 }),
		base(func(c *sluicehttp.RateLimitConfig) { c.ClientIPHeader, c.TrustedProxies = "True-Client-IP", proxies }),
	} {
		if _, err := sluicehttp.RateLimit(c); err != nil {
			t.Errorf("RateLimit(%+v): %v", c, err)
		}
	}
}

func TestParseRules(t *testing.T) {
	got, err := sluicehttp.ParseRules(map[string]string{"/sign-in/*": "3/10s", "/api/*": "100-M", "/health": "unlimited"})
	want := map[string]ratelimit.Rule{"/sign-in/*": {Window: 10 * time.Second, Max: 3}, "/api/*": perMinute(100), "/health": ratelimit.Unlimited}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseRules = %v, %v; want %v", got, err, want)
	}
	if got, err := sluicehttp.ParseRules(nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ParseRules(nil) = %v, %v; want an empty table", got, err)
	}
	_, err = sluicehttp.ParseRules(map[string]string{"/b": "1-Q", "/a": "x", "/c": "5-M"})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), `ParseRules: ["/a"]: rule "x"`) || strings.Count(err.Error(), "invalid request") != 1 {
		t.Errorf("bad rules: %v, want ErrInvalid naming \"/a\" (the first in order) once prefixed", err)
	}
	// The table feeds the middleware.
	f := newHTTP(t, sluicehttp.RateLimitConfig{Default: ratelimit.Unlimited, Paths: got})
	wantCodes(t, "parsed table", f.codes(req{"/sign-in/email", "203.0.113.7:1", nil}, req{"/sign-in/x", "203.0.113.7:1", nil},
		req{"/sign-in/email", "203.0.113.7:1", nil}, req{"/sign-in/email", "203.0.113.7:1", nil}, req{"/sign-in/email", "203.0.113.7:1", nil}), 200, 200, 200, 200, 429)
}
