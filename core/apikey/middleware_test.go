package apikey

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

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
	}
	return rec, body
}

func TestMiddleware(t *testing.T) {
	e := newEnv(t)
	key, k := e.create(t, CreateParams{Remaining: quota(10), RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	var seen *Key
	h := e.m.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kk, ok := FromContext(r.Context())
		if !ok {
			t.Error("no key in the request context")
		}
		seen = kk
		w.WriteHeader(http.StatusOK)
	}))

	rec, body := serve(t, h, DefaultHeader, "")
	if rec.Code != 401 || body.Code != CodeMissing || body.Status != 401 {
		t.Fatalf("missing key: %d %+v", rec.Code, body)
	}
	rec, body = serve(t, h, DefaultHeader, "wrong")
	if rec.Code != 401 || body.Code != CodeInvalid || body.Message == "" {
		t.Fatalf("invalid key: %d %+v", rec.Code, body)
	}
	rec, _ = serve(t, h, "X-Api-Key", key)
	if rec.Code != 200 || seen == nil || seen.ID != k.ID || remaining(t, seen) != 9 {
		t.Fatalf("valid key: %d, key in context %+v", rec.Code, seen)
	}
	serve(t, h, DefaultHeader, key)
	e.clock.Advance(20*time.Second + 500*time.Millisecond)
	rec, body = serve(t, h, DefaultHeader, key)
	if rec.Code != 429 || body.Code != CodeRateLimited || body.Status != 429 || body.TryAgainIn != 39500 || rec.Header().Get("Retry-After") != "40" {
		t.Fatalf("rate limited: %d %+v Retry-After %q", rec.Code, body, rec.Header().Get("Retry-After"))
	}
	if _, ok := FromContext(httptest.NewRequest("GET", "/", nil).Context()); ok {
		t.Fatal("FromContext found a key in a bare context")
	}
}

func TestMiddlewareHeaderAndCost(t *testing.T) {
	e := newEnv(t)
	key, k := e.create(t, CreateParams{Remaining: quota(3), RateLimit: noRateLimit()})
	h := e.m.Middleware(Header("Authorization-Key"), RequestCost(2))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	if rec, body := serve(t, h, DefaultHeader, key); rec.Code != 401 || body.Code != CodeMissing {
		t.Fatalf("key in the default header: %d %+v", rec.Code, body)
	}
	if rec, _ := serve(t, h, "Authorization-Key", key); rec.Code != 200 {
		t.Fatalf("configured header: %d", rec.Code)
	}
	rec, body := serve(t, h, "Authorization-Key", key)
	if rec.Code != 429 || body.Code != CodeUsageExceeded || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("exhausted: %d %+v", rec.Code, body)
	}
	if got := remaining(t, e.get(t, k.ID)); got != 1 {
		t.Fatalf("remaining %d, want 1", got)
	}
	off := false
	if _, err := e.m.Update(t.Context(), k.ID, UpdateParams{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if rec, body := serve(t, h, "Authorization-Key", key); rec.Code != 401 || body.Code != CodeDisabled {
		t.Fatalf("disabled: %d %+v", rec.Code, body)
	}
}

func TestMiddlewareFailureIsServerError(t *testing.T) {
	e := newEnv(t)
	key, _ := e.create(t, CreateParams{})
	h := e.m.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("handler reached") }))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set(DefaultHeader, key)
	ctx, cancel := contextWithCancel(req)
	cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req.WithContext(ctx))
	if rec.Code != 500 {
		t.Fatalf("status %d, want 500", rec.Code)
	}
}

// TestMiddlewareChallenge: every 401 tells the client which header the key
// goes in, and only 401s do.
func TestMiddlewareChallenge(t *testing.T) {
	e := newEnv(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	def := e.m.Middleware()(ok)
	custom := e.m.Middleware(Header("Authorization-Key"))(ok)
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
	h := e.m.Middleware()(ok)
	expect := func(what string, rec *httptest.ResponseRecorder, body ErrorBody, code Code, want map[string]string) {
		t.Helper()
		if rec.Code != 429 || body.Code != code {
			t.Fatalf("%s: %d %+v, want 429 %s", what, rec.Code, body, code)
		}
		for _, name := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"} {
			if got := rec.Header().Get(name); got != want[name] {
				t.Errorf("%s: %s = %q, want %q", what, name, got, want[name])
			}
		}
	}

	// The per-key rate limit: 2 a minute, both spent 20.5 s ago.
	key, _ := e.create(t, CreateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	serve(t, h, DefaultHeader, key)
	serve(t, h, DefaultHeader, key)
	e.clock.Advance(20*time.Second + 500*time.Millisecond)
	rec, body := serve(t, h, DefaultHeader, key)
	expect("window spent", rec, body, CodeRateLimited, map[string]string{
		"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "40", "Retry-After": "40"})

	// A request that costs more than the maximum: the window is whole, and
	// still too small.
	big, _ := e.create(t, CreateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	rec, body = serve(t, e.m.Middleware(RequestCost(3))(ok), DefaultHeader, big)
	expect("cost over the maximum", rec, body, CodeRateLimited, map[string]string{
		"RateLimit-Limit": "2", "RateLimit-Remaining": "2", "RateLimit-Reset": "60", "Retry-After": "60"})

	// A quota of 2 refilled to 2 every minute, spent 15 s after creation.
	refilled, _ := e.create(t, CreateParams{Remaining: quota(2), Refill: Refill{Interval: time.Minute, Amount: 2}, RateLimit: noRateLimit()})
	e.clock.Advance(15 * time.Second)
	serve(t, h, DefaultHeader, refilled)
	serve(t, h, DefaultHeader, refilled)
	rec, body = serve(t, h, DefaultHeader, refilled)
	expect("quota before its refill", rec, body, CodeUsageExceeded, map[string]string{
		"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "45", "Retry-After": "45"})

	// A quota that never refills: nothing to wait for.
	once, _ := e.create(t, CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
	serve(t, h, DefaultHeader, once)
	rec, body = serve(t, h, DefaultHeader, once)
	expect("quota without refill", rec, body, CodeUsageExceeded, map[string]string{"RateLimit-Remaining": "0"})
}
