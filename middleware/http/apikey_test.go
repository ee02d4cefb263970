package sluicehttp_test

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
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// keys is a manager over a fresh in-memory database (or adapter a, when
// given) on a test clock.
type keys struct {
	m     *apikey.Manager
	clock *clock
}

func newKeys(t testing.TB, a ...driver.Adapter) *keys {
	t.Helper()
	var adapter driver.Adapter = memory.New()
	if len(a) > 0 {
		adapter = a[0]
	}
	db, err := core.New(adapter)
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	m, err := apikey.New(db, apikey.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	return &keys{m: m, clock: c}
}

func (e *keys) get(t testing.TB, id int64) *apikey.Key {
	t.Helper()
	k, err := e.m.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%d): %v", id, err)
	}
	return k
}

func (e *keys) create(t testing.TB, p apikey.CreateParams) (string, *apikey.Key) {
	t.Helper()
	if p.ReferenceID == "" {
		p.ReferenceID = "user-1"
	}
	plain, k, err := e.m.Create(context.Background(), p)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return plain, k
}

func noRateLimit() *apikey.RateLimit { return &apikey.RateLimit{} }

func quota(n int64) *int64 { return &n }

func remaining(t testing.TB, k *apikey.Key) int64 {
	t.Helper()
	if k.Remaining == nil {
		t.Fatal("Remaining is nil (unlimited)")
	}
	return *k.Remaining
}

// failingRead fails every FindOne with err(ctx), before any write.
type failingRead struct {
	*memory.Memory
	err func(ctx context.Context) error
}

func (a failingRead) FindOne(ctx context.Context, _ *driver.Table, _ []driver.Where) (driver.Record, error) {
	return nil, a.err(ctx)
}

// mw builds the middleware of config (at most one; its Manager m when nil), failing the
// test on a constructor error.
func mw(t testing.TB, m *apikey.Manager, next http.Handler, config ...sluicehttp.APIKeyConfig) http.Handler {
	t.Helper()
	var cfg sluicehttp.APIKeyConfig
	if len(config) > 0 {
		cfg = config[0]
	}
	if cfg.Manager == nil {
		cfg.Manager = m
	}
	wrap, err := sluicehttp.APIKey(cfg)
	if err != nil {
		t.Fatalf("APIKey: %v", err)
	}
	return wrap(next)
}

func serve(t *testing.T, h http.Handler, header, key string) (*httptest.ResponseRecorder, sluicehttp.ErrorBody) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/things", nil)
	if key != "" {
		req.Header.Set(header, key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var body sluicehttp.ErrorBody
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
	e := newKeys(t)
	key, k := e.create(t, apikey.CreateParams{Remaining: quota(10), RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	var seen *apikey.Key
	h := mw(t, e.m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kk, ok := sluicehttp.KeyFromContext(r.Context())
		if !ok {
			t.Error("no key in the request context")
		}
		seen = kk
		w.WriteHeader(http.StatusOK)
	}))

	rec, body := serve(t, h, sluicehttp.DefaultHeader, "")
	if rec.Code != 401 || body.Code != sluicehttp.CodeMissingKey || body.Status != 401 {
		t.Fatalf("missing key: %d %+v", rec.Code, body)
	}
	rec, body = serve(t, h, sluicehttp.DefaultHeader, "wrong")
	if rec.Code != 401 || apikey.Code(body.Code) != apikey.CodeInvalid || body.Message == "" {
		t.Fatalf("invalid key: %d %+v", rec.Code, body)
	}
	rec, _ = serve(t, h, "X-Api-Key", key)
	if rec.Code != 200 || seen == nil || seen.ID != k.ID || remaining(t, seen) != 9 {
		t.Fatalf("valid key: %d, key in context %+v", rec.Code, seen)
	}
	serve(t, h, sluicehttp.DefaultHeader, key)
	e.clock.Advance(20*time.Second + 500*time.Millisecond)
	rec, body = serve(t, h, sluicehttp.DefaultHeader, key)
	if rec.Code != 429 || apikey.Code(body.Code) != apikey.CodeRateLimited || body.Status != 429 || body.RetryAfter != 40 || rec.Header().Get("Retry-After") != "40" {
		t.Fatalf("rate limited: %d %+v Retry-After %q", rec.Code, body, rec.Header().Get("Retry-After"))
	}
	if _, ok := sluicehttp.KeyFromContext(httptest.NewRequest("GET", "/", nil).Context()); ok {
		t.Fatal("FromContext found a key in a bare context")
	}
}

// TestMiddlewareResponses checks every error response end to end: the
// exact JSON body and the headers that go with it.
func TestMiddlewareResponses(t *testing.T) {
	e := newKeys(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	h := mw(t, e.m, ok)
	limited, _ := e.create(t, apikey.CreateParams{RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 1}})
	refilled, _ := e.create(t, apikey.CreateParams{Remaining: quota(1), Refill: apikey.Refill{Interval: time.Minute, Amount: 5}, RateLimit: noRateLimit()})
	once, _ := e.create(t, apikey.CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
	for _, k := range []string{limited, refilled, once} {
		if rec, _ := serve(t, h, sluicehttp.DefaultHeader, k); rec.Code != 200 {
			t.Fatalf("first request: %d", rec.Code)
		}
	}
	e.clock.Advance(1500 * time.Millisecond)
	failing := func(err error) http.Handler {
		mem := memory.New()
		f := newKeys(t, failingRead{Memory: mem, err: func(context.Context) error { return err }})
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
			rec, _ := serve(t, tc.h, sluicehttp.DefaultHeader, tc.key)
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
	e := newKeys(t)
	key, k := e.create(t, apikey.CreateParams{Remaining: quota(3), RateLimit: noRateLimit()})
	h := mw(t, e.m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), sluicehttp.APIKeyConfig{Header: "Authorization-Key", Verify: []apikey.VerifyOption{apikey.Cost(2)}})
	if rec, body := serve(t, h, sluicehttp.DefaultHeader, key); rec.Code != 401 || body.Code != sluicehttp.CodeMissingKey {
		t.Fatalf("key in the default header: %d %+v", rec.Code, body)
	}
	if rec, _ := serve(t, h, "Authorization-Key", key); rec.Code != 200 {
		t.Fatalf("configured header: %d", rec.Code)
	}
	rec, body := serve(t, h, "Authorization-Key", key)
	if rec.Code != 429 || apikey.Code(body.Code) != apikey.CodeUsageExceeded || rec.Header().Get("Retry-After") != "" || body.RetryAfter != 0 {
		t.Fatalf("exhausted: %d %+v", rec.Code, body)
	}
	if got := remaining(t, e.get(t, k.ID)); got != 1 {
		t.Fatalf("remaining %d, want 1", got)
	}
	off := false
	if _, err := e.m.Update(t.Context(), k.ID, apikey.UpdateParams{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if rec, body := serve(t, h, "Authorization-Key", key); rec.Code != 401 || apikey.Code(body.Code) != apikey.CodeDisabled {
		t.Fatalf("disabled: %d %+v", rec.Code, body)
	}
}

// TestMiddlewareErrors: verification errors reach OnError with the
// request; a client that hung up gets 499 and no body, like the ratelimit
// middleware, and the handler never runs.
func TestMiddlewareErrors(t *testing.T) {
	mem := memory.New()
	down := errors.New("database down")
	e := newKeys(t, failingRead{Memory: mem, err: func(ctx context.Context) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return down
	}})
	var reported []error
	h := mw(t, e.m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("handler reached") }),
		sluicehttp.APIKeyConfig{OnError: func(r *http.Request, err error) {
			if r.URL.Path != "/things" {
				t.Errorf("OnError got the request for %q", r.URL.Path)
			}
			reported = append(reported, err)
		}})
	if rec, body := serve(t, h, sluicehttp.DefaultHeader, "k"); rec.Code != 500 || body.Code != sluicehttp.CodeInternal {
		t.Errorf("failure: %d %+v, want 500 %s", rec.Code, body, sluicehttp.CodeInternal)
	}
	req := httptest.NewRequest(http.MethodGet, "/things", nil)
	req.Header.Set(sluicehttp.DefaultHeader, "k")
	ctx, cancel := context.WithCancel(req.Context())
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

// TestMiddlewareConstructorErrors: a bad configuration and an
// uninitialised Manager are errors wrapping core.ErrInvalid that name the
// field at fault, and say "invalid request" once.
func TestMiddlewareConstructorErrors(t *testing.T) {
	e := newKeys(t)
	verify := func(opts ...apikey.VerifyOption) sluicehttp.APIKeyConfig {
		return sluicehttp.APIKeyConfig{Manager: e.m, Verify: opts}
	}
	cases := []struct {
		name string
		cfg  sluicehttp.APIKeyConfig
		want string
	}{
		{"nil option", verify(apikey.Cost(1), nil), "APIKeyConfig.Verify: CheckVerify: option 2 of 2 is nil"},
		{"header with a space", sluicehttp.APIKeyConfig{Manager: e.m, Header: "api key"}, `APIKeyConfig.Header "api key" is not a header name`},
		{"header with a colon", sluicehttp.APIKeyConfig{Manager: e.m, Header: "x-api-key:"}, `APIKeyConfig.Header "x-api-key:"`},
		{"negative cost", verify(apikey.Cost(-1)), "APIKeyConfig.Verify: CheckVerify: cost -1 is negative"},
		{"permission without an action", verify(apikey.Permissions(map[string][]string{"files": nil})), `APIKeyConfig.Verify: CheckVerify: Permissions: resource "files" lists no action`},
		{"bad limit name", verify(apikey.LimitCost("a b", 1)), `APIKeyConfig.Verify: CheckVerify: limit name "a b"`},
		{"negative limit cost", verify(apikey.LimitCost("x", -1)), `APIKeyConfig.Verify: CheckVerify: LimitCost("x"): cost -1 is negative`},
		{"zero Manager", sluicehttp.APIKeyConfig{Manager: &apikey.Manager{}}, "APIKeyConfig.Manager: CheckVerify: the Manager is not initialised"},
		{"nil Manager", sluicehttp.APIKeyConfig{}, "APIKeyConfig.Manager: CheckVerify: the Manager is not initialised"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := sluicehttp.APIKey(tc.cfg)
			if h != nil || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "invalid request") != 1 {
				t.Fatalf("APIKey = %v, %v; want nil and ErrInvalid saying %q", h != nil, err, tc.want)
			}
		})
	}
	good := sluicehttp.APIKeyConfig{Manager: e.m, Header: "Authorization-Key", Verify: []apikey.VerifyOption{apikey.Cost(0)}, OnError: func(*http.Request, error) {}}
	if _, err := sluicehttp.APIKey(good); err != nil {
		t.Errorf("good configuration: %v", err)
	}
}

// TestMiddlewareChallenge: every 401 tells the client which header the key
// goes in, and only 401s do.
func TestMiddlewareChallenge(t *testing.T) {
	e := newKeys(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	def := mw(t, e.m, ok)
	custom := mw(t, e.m, ok, sluicehttp.APIKeyConfig{Header: "Authorization-Key"})
	key, k := e.create(t, apikey.CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
	expiring, _ := e.create(t, apikey.CreateParams{ExpiresIn: time.Hour, RateLimit: noRateLimit()})

	check := func(what string, h http.Handler, header, key string, status int, want string) {
		t.Helper()
		rec, _ := serve(t, h, header, key)
		if rec.Code != status || rec.Header().Get("WWW-Authenticate") != want {
			t.Errorf("%s: %d WWW-Authenticate %q, want %d %q", what, rec.Code, rec.Header().Get("WWW-Authenticate"), status, want)
		}
	}
	check("missing", def, sluicehttp.DefaultHeader, "", 401, `ApiKey header="x-api-key"`)
	check("missing, custom header", custom, sluicehttp.DefaultHeader, key, 401, `ApiKey header="Authorization-Key"`)
	check("invalid", custom, "Authorization-Key", "wrong", 401, `ApiKey header="Authorization-Key"`)
	check("valid", def, sluicehttp.DefaultHeader, key, 200, "")
	check("exhausted", def, sluicehttp.DefaultHeader, key, 429, "")
	off := false
	if _, err := e.m.Update(t.Context(), k.ID, apikey.UpdateParams{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	check("disabled", def, sluicehttp.DefaultHeader, key, 401, `ApiKey header="x-api-key"`)
	e.clock.Advance(time.Hour)
	check("expired", def, sluicehttp.DefaultHeader, expiring, 401, `ApiKey header="x-api-key"`)

}

// TestMiddlewareRateLimitHeaders: a 429 describes the key's window or quota
// in the ratelimit middleware's headers, and says when to come back only
// when the key will admit a request then.
func TestMiddlewareRateLimitHeaders(t *testing.T) {
	e := newKeys(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	h := mw(t, e.m, ok)
	expect := func(what string, rec *httptest.ResponseRecorder, body sluicehttp.ErrorBody, code apikey.Code, want map[string]string) {
		t.Helper()
		if rec.Code != 429 || apikey.Code(body.Code) != code {
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
	key, _ := e.create(t, apikey.CreateParams{RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	serve(t, h, sluicehttp.DefaultHeader, key)
	serve(t, h, sluicehttp.DefaultHeader, key)
	e.clock.Advance(20*time.Second + 500*time.Millisecond)
	rec, body := serve(t, h, sluicehttp.DefaultHeader, key)
	expect("window spent", rec, body, apikey.CodeRateLimited, map[string]string{
		"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "40", "Retry-After": "40", "X-Retry-After": "40"})

	// A request that costs more than the maximum: the window is whole, and
	// still too small.
	big, _ := e.create(t, apikey.CreateParams{RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	rec, body = serve(t, mw(t, e.m, ok, sluicehttp.APIKeyConfig{Verify: []apikey.VerifyOption{apikey.Cost(3)}}), sluicehttp.DefaultHeader, big)
	expect("cost over the maximum", rec, body, apikey.CodeRateLimited, map[string]string{
		"RateLimit-Limit": "2", "RateLimit-Remaining": "2", "RateLimit-Reset": "60", "Retry-After": "60", "X-Retry-After": "60"})

	// A quota of 2 refilled to 2 every minute, spent 15 s after creation.
	refilled, _ := e.create(t, apikey.CreateParams{Remaining: quota(2), Refill: apikey.Refill{Interval: time.Minute, Amount: 2}, RateLimit: noRateLimit()})
	e.clock.Advance(15 * time.Second)
	serve(t, h, sluicehttp.DefaultHeader, refilled)
	serve(t, h, sluicehttp.DefaultHeader, refilled)
	rec, body = serve(t, h, sluicehttp.DefaultHeader, refilled)
	expect("quota before its refill", rec, body, apikey.CodeUsageExceeded, map[string]string{
		"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "45", "Retry-After": "45", "X-Retry-After": "45"})

	// A quota that never refills: nothing to wait for.
	once, _ := e.create(t, apikey.CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
	serve(t, h, sluicehttp.DefaultHeader, once)
	rec, body = serve(t, h, sluicehttp.DefaultHeader, once)
	expect("quota without refill", rec, body, apikey.CodeUsageExceeded, map[string]string{"RateLimit-Remaining": "0"})
}

// TestMiddlewareLimitCost: each request spends the named limit the route
// names; one without room answers 429 RATE_LIMITED.
func TestMiddlewareLimitCost(t *testing.T) {
	e := newKeys(t)
	key, _ := e.create(t, apikey.CreateParams{RateLimit: noRateLimit(), Limits: map[string]apikey.NamedLimit{"uploads": {Max: 5, Window: time.Hour}}})
	h := mw(t, e.m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
		sluicehttp.APIKeyConfig{Verify: []apikey.VerifyOption{apikey.LimitCost("uploads", 2)}})
	var codes []int
	for range 3 {
		rec, _ := serve(t, h, sluicehttp.DefaultHeader, key)
		codes = append(codes, rec.Code)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Fatalf("statuses %v, want 200, 200, 429", codes)
	}
}

// TestMiddlewarePermissions: the middleware answers 403
// INSUFFICIENT_PERMISSIONS for a route whose permissions the key lacks,
// spending nothing, and passes the request on for one it holds.
func TestMiddlewarePermissions(t *testing.T) {
	e := newKeys(t)
	plain, k := e.create(t, apikey.CreateParams{Remaining: quota(5), RateLimit: noRateLimit(),
		Permissions: map[string][]string{"files": {"read", "write"}, "admin": {"all"}}})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	read := mw(t, e.m, ok, sluicehttp.APIKeyConfig{Verify: []apikey.VerifyOption{apikey.Permissions(map[string][]string{"files": {"read"}})}})
	billing := mw(t, e.m, ok, sluicehttp.APIKeyConfig{Verify: []apikey.VerifyOption{apikey.AnyPermission(map[string][]string{"billing": {"read", "write"}})}})
	if rec, _ := serve(t, read, sluicehttp.DefaultHeader, plain); rec.Code != http.StatusOK {
		t.Fatalf("held permission: status %d, want 200", rec.Code)
	}
	rec, body := serve(t, billing, sluicehttp.DefaultHeader, plain)
	if rec.Code != http.StatusForbidden || apikey.Code(body.Code) != apikey.CodeForbidden {
		t.Fatalf("missing permission: %d %+v, want 403 %s", rec.Code, body, apikey.CodeForbidden)
	}
	if got := remaining(t, e.get(t, k.ID)); got != 4 {
		t.Fatalf("remaining %d after one admitted and one forbidden request, want 4", got)
	}
}
