package apikey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// mw builds the middleware, failing the test on a constructor error.
func mw(t testing.TB, m *Manager, next http.Handler, opts ...MiddlewareOption) http.Handler {
	t.Helper()
	wrap, err := m.Middleware(opts...)
	if err != nil {
		t.Fatalf("Middleware: %v", err)
	}
	return wrap(next)
}

func serve(t *testing.T, h http.Handler, header, key string) (*httptest.ResponseRecorder, ErrorBody) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/things", nil)
	if key != "" {
		req.Header.Set(header, key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var body ErrorBody
	if rec.Code != http.StatusOK {
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("error Content-Type %q", ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("error body %q: %v", rec.Body.String(), err)
		}
		if body.Status != rec.Code {
			t.Fatalf("body status %d, response status %d", body.Status, rec.Code)
		}
	}
	return rec, body
}

func TestMiddleware(t *testing.T) {
	e := newEnv(t)
	key, k := e.create(t, CreateParams{Remaining: quota(10), RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	var seen *Key
	h := mw(t, e.m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kk, ok := FromContext(r.Context())
		if !ok {
			t.Error("no key in the request context")
		}
		seen = kk
		w.WriteHeader(http.StatusOK)
	}))

	rec, body := serve(t, h, DefaultHeader, "")
	if rec.Code != 401 || Code(body.Code) != CodeMissing || body.Status != 401 {
		t.Fatalf("missing key: %d %+v", rec.Code, body)
	}
	rec, body = serve(t, h, DefaultHeader, "wrong")
	if rec.Code != 401 || Code(body.Code) != CodeInvalid || body.Message == "" {
		t.Fatalf("invalid key: %d %+v", rec.Code, body)
	}
	rec, _ = serve(t, h, "X-Api-Key", key)
	if rec.Code != 200 || seen == nil || seen.ID != k.ID || remaining(t, seen) != 9 {
		t.Fatalf("valid key: %d, key in context %+v", rec.Code, seen)
	}
	serve(t, h, DefaultHeader, key)
	e.clock.Advance(20*time.Second + 500*time.Millisecond)
	rec, body = serve(t, h, DefaultHeader, key)
	if rec.Code != 429 || Code(body.Code) != CodeRateLimited || body.Status != 429 || body.RetryAfter != 40 || rec.Header().Get("Retry-After") != "40" {
		t.Fatalf("rate limited: %d %+v Retry-After %q", rec.Code, body, rec.Header().Get("Retry-After"))
	}
	if _, ok := FromContext(httptest.NewRequest("GET", "/", nil).Context()); ok {
		t.Fatal("FromContext found a key in a bare context")
	}
}

// TestMiddlewareResponses checks every error response end to end: the
// exact JSON body and the headers that go with it.
func TestMiddlewareResponses(t *testing.T) {
	e := newEnv(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	h := mw(t, e.m, ok)
	limited, _ := e.create(t, CreateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 1}})
	refilled, _ := e.create(t, CreateParams{Remaining: quota(1), Refill: Refill{Interval: time.Minute, Amount: 5}, RateLimit: noRateLimit()})
	once, _ := e.create(t, CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
	for _, k := range []string{limited, refilled, once} {
		if rec, _ := serve(t, h, DefaultHeader, k); rec.Code != 200 {
			t.Fatalf("first request: %d", rec.Code)
		}
	}
	e.clock.Advance(1500 * time.Millisecond)
	failing := func(err error) http.Handler {
		mem := memory.New()
		f := newEnvOn(t, mem, failingRead{Memory: mem, err: func(context.Context) error { return err }})
		return mw(t, f.m, ok)
	}
	const challenge = `ApiKey header="x-api-key"`
	all := []string{"Content-Type", "WWW-Authenticate", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After", "X-Retry-After"}
	cases := []struct {
		name    string
		h       http.Handler
		key     string
		status  int
		body    string
		headers map[string]string // every header of all, "" for absent
	}{
		{"missing", h, "", 401, `{"code":"MISSING_API_KEY","message":"missing API key in header x-api-key","status":401}`,
			map[string]string{"WWW-Authenticate": challenge}},
		{"invalid", h, "wrong", 401, `{"code":"INVALID_API_KEY","message":"invalid API key","status":401}`,
			map[string]string{"WWW-Authenticate": challenge}},
		{"rate limited", h, limited, 429, `{"code":"RATE_LIMITED","message":"API key rate limit exceeded","status":429,"retryAfter":59}`,
			map[string]string{"RateLimit-Limit": "1", "RateLimit-Remaining": "0", "RateLimit-Reset": "59", "Retry-After": "59", "X-Retry-After": "59"}},
		{"quota before its refill", h, refilled, 429, `{"code":"USAGE_EXCEEDED","message":"API key usage exceeded","status":429,"retryAfter":59}`,
			map[string]string{"RateLimit-Limit": "5", "RateLimit-Remaining": "0", "RateLimit-Reset": "59", "Retry-After": "59", "X-Retry-After": "59"}},
		{"quota without refill", h, once, 429, `{"code":"USAGE_EXCEEDED","message":"API key usage exceeded","status":429}`,
			map[string]string{"RateLimit-Remaining": "0"}},
		{"contention", failing(fmt.Errorf("busy: %w", core.ErrContention)), "k", 503, `{"code":"CONTENTION","message":"the key is too busy; try again","status":503}`, nil},
		{"failure", failing(errors.New("database down")), "k", 500, `{"code":"INTERNAL_ERROR","message":"API key verification failed","status":500}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, _ := serve(t, tc.h, DefaultHeader, tc.key)
			if rec.Code != tc.status || strings.TrimSpace(rec.Body.String()) != tc.body {
				t.Errorf("answered %d %s\nwant %d %s", rec.Code, rec.Body, tc.status, tc.body)
			}
			for _, name := range all {
				want := tc.headers[name]
				if name == "Content-Type" {
					want = "application/json"
				}
				if got := rec.Header().Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestMiddlewareHeaderAndCost(t *testing.T) {
	e := newEnv(t)
	key, k := e.create(t, CreateParams{Remaining: quota(3), RateLimit: noRateLimit()})
	h := mw(t, e.m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), Header("Authorization-Key"), RequestCost(2))
	if rec, body := serve(t, h, DefaultHeader, key); rec.Code != 401 || Code(body.Code) != CodeMissing {
		t.Fatalf("key in the default header: %d %+v", rec.Code, body)
	}
	if rec, _ := serve(t, h, "Authorization-Key", key); rec.Code != 200 {
		t.Fatalf("configured header: %d", rec.Code)
	}
	rec, body := serve(t, h, "Authorization-Key", key)
	if rec.Code != 429 || Code(body.Code) != CodeUsageExceeded || rec.Header().Get("Retry-After") != "" || body.RetryAfter != 0 {
		t.Fatalf("exhausted: %d %+v", rec.Code, body)
	}
	if got := remaining(t, e.get(t, k.ID)); got != 1 {
		t.Fatalf("remaining %d, want 1", got)
	}
	off := false
	if _, err := e.m.Update(t.Context(), k.ID, UpdateParams{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if rec, body := serve(t, h, "Authorization-Key", key); rec.Code != 401 || Code(body.Code) != CodeDisabled {
		t.Fatalf("disabled: %d %+v", rec.Code, body)
	}
}

// TestMiddlewareErrors: verification errors reach OnError with the
// request; a client that hung up gets 499 and no body, like the ratelimit
// middleware, and the handler never runs.
func TestMiddlewareErrors(t *testing.T) {
	mem := memory.New()
	down := errors.New("database down")
	e := newEnvOn(t, mem, failingRead{Memory: mem, err: func(ctx context.Context) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return down
	}})
	var reported []error
	h := mw(t, e.m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("handler reached") }),
		OnError(func(r *http.Request, err error) {
			if r.URL.Path != "/things" {
				t.Errorf("OnError got the request for %q", r.URL.Path)
			}
			reported = append(reported, err)
		}))
	if rec, body := serve(t, h, DefaultHeader, "k"); rec.Code != 500 || Code(body.Code) != CodeInternal {
		t.Errorf("failure: %d %+v, want 500 %s", rec.Code, body, CodeInternal)
	}
	req := httptest.NewRequest(http.MethodGet, "/things", nil)
	req.Header.Set(DefaultHeader, "k")
	ctx, cancel := contextWithCancel(req)
	cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req.WithContext(ctx))
	if rec.Code != 499 || rec.Body.Len() != 0 {
		t.Errorf("cancelled: %d %q, want 499 and no body", rec.Code, rec.Body)
	}
	if len(reported) != 2 || !errors.Is(reported[0], down) || !errors.Is(reported[1], context.Canceled) {
		t.Errorf("OnError received %v, want the database error, then context.Canceled", reported)
	}
}

// TestMiddlewareConstructorErrors: bad options and an uninitialised
// Manager are errors wrapping core.ErrInvalid that name what is wrong.
func TestMiddlewareConstructorErrors(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name string
		m    *Manager
		opts []MiddlewareOption
		want string
	}{
		{"nil option", e.m, []MiddlewareOption{Header("x-key"), nil}, "Middleware: option 2 of 2 is nil"},
		{"empty header", e.m, []MiddlewareOption{Header("")}, `Middleware: Header(""): not a valid header name`},
		{"header with a space", e.m, []MiddlewareOption{Header("api key")}, `Middleware: Header("api key"): not a valid header name`},
		{"header with a colon", e.m, []MiddlewareOption{Header("x-api-key:")}, `Header("x-api-key:")`},
		{"negative cost", e.m, []MiddlewareOption{RequestCost(-1)}, "Middleware: RequestCost(-1): the cost must not be negative"},
		{"nil OnError", e.m, []MiddlewareOption{OnError(nil)}, "Middleware: OnError(nil)"},
		{"zero Manager", &Manager{}, nil, "Middleware: the Manager is not initialised"},
		{"nil Manager", nil, nil, "Middleware: the Manager is not initialised"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := tc.m.Middleware(tc.opts...)
			if h != nil || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Middleware = %v, %v; want nil and ErrInvalid saying %q", h != nil, err, tc.want)
			}
		})
	}
	if _, err := e.m.Middleware(Header("Authorization-Key"), RequestCost(0), OnError(func(*http.Request, error) {})); err != nil {
		t.Errorf("good options: %v", err)
	}
}

// TestMiddlewareChallenge: every 401 tells the client which header the key
// goes in, and only 401s do.
func TestMiddlewareChallenge(t *testing.T) {
	e := newEnv(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	def := mw(t, e.m, ok)
	custom := mw(t, e.m, ok, Header("Authorization-Key"))
	key, k := e.create(t, CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
	expiring, _ := e.create(t, CreateParams{ExpiresIn: time.Hour, RateLimit: noRateLimit()})

	check := func(what string, h http.Handler, header, key string, status int, want string) {
		t.Helper()
		rec, _ := serve(t, h, header, key)
		if rec.Code != status || rec.Header().Get("WWW-Authenticate") != want {
			t.Errorf("%s: %d WWW-Authenticate %q, want %d %q", what, rec.Code, rec.Header().Get("WWW-Authenticate"), status, want)
		}
	}
	check("missing", def, DefaultHeader, "", 401, `ApiKey header="x-api-key"`)
	check("missing, custom header", custom, DefaultHeader, key, 401, `ApiKey header="Authorization-Key"`)
	check("invalid", custom, "Authorization-Key", "wrong", 401, `ApiKey header="Authorization-Key"`)
	check("valid", def, DefaultHeader, key, 200, "")
	check("exhausted", def, DefaultHeader, key, 429, "")
	off := false
	if _, err := e.m.Update(t.Context(), k.ID, UpdateParams{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	check("disabled", def, DefaultHeader, key, 401, `ApiKey header="x-api-key"`)
	e.clock.Advance(time.Hour)
	check("expired", def, DefaultHeader, expiring, 401, `ApiKey header="x-api-key"`)

	if got, want := quote(`a"b\c`), `"a\"b\\c"`; got != want {
		t.Errorf("quote: %s, want %s", got, want)
	}
}

// TestMiddlewareRateLimitHeaders: a 429 describes the key's window or quota
// in the ratelimit middleware's headers, and says when to come back only
// when the key will admit a request then.
func TestMiddlewareRateLimitHeaders(t *testing.T) {
	e := newEnv(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	h := mw(t, e.m, ok)
	expect := func(what string, rec *httptest.ResponseRecorder, body ErrorBody, code Code, want map[string]string) {
		t.Helper()
		if rec.Code != 429 || Code(body.Code) != code {
			t.Fatalf("%s: %d %+v, want 429 %s", what, rec.Code, body, code)
		}
		for _, name := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After", "X-Retry-After"} {
			if got := rec.Header().Get(name); got != want[name] {
				t.Errorf("%s: %s = %q, want %q", what, name, got, want[name])
			}
		}
		if got := fmt.Sprint(body.RetryAfter); want["Retry-After"] != "" && got != want["Retry-After"] {
			t.Errorf("%s: body retryAfter %s, want the Retry-After header %s", what, got, want["Retry-After"])
		}
	}

	// The per-key rate limit: 2 a minute, both spent 20.5 s ago.
	key, _ := e.create(t, CreateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	serve(t, h, DefaultHeader, key)
	serve(t, h, DefaultHeader, key)
	e.clock.Advance(20*time.Second + 500*time.Millisecond)
	rec, body := serve(t, h, DefaultHeader, key)
	expect("window spent", rec, body, CodeRateLimited, map[string]string{
		"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "40", "Retry-After": "40", "X-Retry-After": "40"})

	// A request that costs more than the maximum: the window is whole, and
	// still too small.
	big, _ := e.create(t, CreateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	rec, body = serve(t, mw(t, e.m, ok, RequestCost(3)), DefaultHeader, big)
	expect("cost over the maximum", rec, body, CodeRateLimited, map[string]string{
		"RateLimit-Limit": "2", "RateLimit-Remaining": "2", "RateLimit-Reset": "60", "Retry-After": "60", "X-Retry-After": "60"})

	// A quota of 2 refilled to 2 every minute, spent 15 s after creation.
	refilled, _ := e.create(t, CreateParams{Remaining: quota(2), Refill: Refill{Interval: time.Minute, Amount: 2}, RateLimit: noRateLimit()})
	e.clock.Advance(15 * time.Second)
	serve(t, h, DefaultHeader, refilled)
	serve(t, h, DefaultHeader, refilled)
	rec, body = serve(t, h, DefaultHeader, refilled)
	expect("quota before its refill", rec, body, CodeUsageExceeded, map[string]string{
		"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "45", "Retry-After": "45", "X-Retry-After": "45"})

	// A quota that never refills: nothing to wait for.
	once, _ := e.create(t, CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
	serve(t, h, DefaultHeader, once)
	rec, body = serve(t, h, DefaultHeader, once)
	expect("quota without refill", rec, body, CodeUsageExceeded, map[string]string{"RateLimit-Remaining": "0"})
}

// TestMiddlewareLimitCost: each request spends the named limit the route
// names; one without room answers 429 RATE_LIMITED.
func TestMiddlewareLimitCost(t *testing.T) {
	e := newEnv(t)
	key, _ := e.create(t, CreateParams{RateLimit: noRateLimit(), Limits: map[string]NamedLimit{"uploads": {Max: 5, Window: time.Hour}}})
	mw, err := e.m.Middleware(RequestLimitCost("uploads", 2))
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var codes []int
	for range 3 {
		req := httptest.NewRequest("POST", "/upload", nil)
		req.Header.Set("x-api-key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		codes = append(codes, rec.Code)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Fatalf("statuses %v, want 200, 200, 429", codes)
	}
	for _, bad := range []MiddlewareOption{RequestLimitCost("a b", 1), RequestLimitCost("x", -1)} {
		if _, err := e.m.Middleware(bad); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("bad RequestLimitCost: err = %v, want ErrInvalid", err)
		}
	}
}
