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
