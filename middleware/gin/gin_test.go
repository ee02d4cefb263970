package sluicegin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicegin "github.com/sluice-go/sluice/middleware/gin"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// newClock is the tests' settable clock (adaptertest.Clock): it moves only
// when a test advances it, so windows and refills are crossed without
// sleeping.
func newClock() *adaptertest.Clock {
	return adaptertest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

// reply is one response as a client sees it.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) errorBody(t *testing.T) sluicehttp.ErrorBody {
	t.Helper()
	var b sluicehttp.ErrorBody
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("body %q is not an ErrorBody: %v", r.body, err)
	}
	return b
}

func get(t *testing.T, url string, header map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

func wantHeaders(t *testing.T, r reply, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := r.header.Get(k); got != v {
			t.Errorf("%s = %q, want %q (status %d)", k, got, v, r.status)
		}
	}
}

func TestRateLimitEndToEnd(t *testing.T) {
	clk := newClock()
	limiter, err := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	limit, err := sluicegin.RateLimit(sluicehttp.RateLimitConfig{Limiter: limiter, Default: ratelimit.Rule{Window: time.Minute, Max: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var handled, after atomic.Int64
	r := gin.New()
	r.Use(limit, func(c *gin.Context) { c.Next(); after.Add(1) })
	r.GET("/hello", func(c *gin.Context) {
		handled.Add(1)
		c.String(http.StatusOK, "hi")
	})
	srv := httptest.NewServer(r)
	defer srv.Close()

	for i, remaining := range []string{"1", "0"} {
		got := get(t, srv.URL+"/hello", nil)
		if got.status != http.StatusOK || string(got.body) != "hi" {
			t.Fatalf("request %d: %d %q, want 200 hi", i+1, got.status, got.body)
		}
		wantHeaders(t, got, map[string]string{"RateLimit-Limit": "2", "RateLimit-Remaining": remaining, "RateLimit-Reset": "60", "Retry-After": ""})
	}
	clk.Advance(15 * time.Second)
	got := get(t, srv.URL+"/hello", nil)
	if got.status != http.StatusTooManyRequests {
		t.Fatalf("third request: %d %q, want 429", got.status, got.body)
	}
	wantHeaders(t, got, map[string]string{"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "45",
		"Retry-After": "45", "X-Retry-After": "45", "Content-Type": "application/json"})
	if b := got.errorBody(t); b != (sluicehttp.ErrorBody{Code: sluicehttp.CodeRateLimited, Message: b.Message, Status: 429, RetryAfter: 45}) || b.Message == "" {
		t.Errorf("body %+v", b)
	}
	if n, m := handled.Load(), after.Load(); n != 2 || m != 2 {
		t.Errorf("handler ran %d times, the middleware after the limiter %d, want 2 and 2: a denial must abort the chain", n, m)
	}

	clk.Advance(45 * time.Second) // the window is over
	if got := get(t, srv.URL+"/hello", nil); got.status != http.StatusOK {
		t.Errorf("after the window: %d, want 200", got.status)
	}
}

// The options of sluicehttp.RateLimitConfig reach the requests gin serves: a
// trusted proxy's X-Forwarded-For names the client, an Unlimited path is
// not counted, and the legacy header style is used.
func TestRateLimitOptions(t *testing.T) {
	clk := newClock()
	limiter, _ := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(clk.Now))
	limit, err := sluicegin.RateLimit(sluicehttp.RateLimitConfig{
		Limiter:        limiter,
		Default:        ratelimit.Rule{Window: time.Minute, Max: 1},
		Paths:          map[string]ratelimit.Rule{"/health": ratelimit.Unlimited},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
		Headers:        sluicehttp.HeadersLegacy,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := gin.New()
	r.Use(limit)
	r.GET("/a", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	r.GET("/health", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	srv := httptest.NewServer(r)
	defer srv.Close()

	alice := map[string]string{"X-Forwarded-For": "203.0.113.1"}
	bob := map[string]string{"X-Forwarded-For": "203.0.113.2"}
	for _, step := range []struct {
		path   string
		header map[string]string
		want   int
	}{
		{"/a", alice, 204}, {"/a", alice, 429}, {"/a", bob, 204}, {"/health", alice, 204}, {"/health", alice, 204},
	} {
		got := get(t, srv.URL+step.path, step.header)
		if got.status != step.want {
			t.Errorf("%s from %s: %d, want %d", step.path, step.header["X-Forwarded-For"], got.status, step.want)
		}
		if step.path == "/a" && got.header.Get("X-RateLimit-Limit") != "1" {
			t.Errorf("%s: X-RateLimit-Limit %q, want 1 (legacy style)", step.path, got.header.Get("X-RateLimit-Limit"))
		}
		if step.path == "/health" && got.header.Get("X-RateLimit-Limit") != "" {
			t.Errorf("/health is unlimited but carries X-RateLimit-Limit")
		}
	}
}

// failing is a secondary storage whose every call fails.
type failing struct{}

var errDown = errors.New("storage down")

func (failing) Get(context.Context, string) (string, bool, error)        { return "", false, errDown }
func (failing) Set(context.Context, string, string, time.Duration) error { return errDown }
func (failing) Delete(context.Context, string) error                     { return errDown }
func (failing) Increment(context.Context, string, int64, time.Duration) (driver.Counter, error) {
	return driver.Counter{}, errDown
}

func TestRateLimitStorageFailure(t *testing.T) {
	for _, open := range []bool{false, true} {
		var opts []ratelimit.Option
		want := http.StatusServiceUnavailable
		if open {
			opts, want = append(opts, ratelimit.WithFailOpen()), http.StatusOK
		}
		limiter, _ := ratelimit.New(ratelimit.Secondary(failing{}), opts...)
		var reported atomic.Int64
		limit, err := sluicegin.RateLimit(sluicehttp.RateLimitConfig{Limiter: limiter, Default: ratelimit.Rule{Window: time.Minute, Max: 5},
			OnError: func(_ *http.Request, err error) {
				if errors.Is(err, errDown) {
					reported.Add(1)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		r := gin.New()
		r.Use(limit)
		r.GET("/x", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
		srv := httptest.NewServer(r)
		got := get(t, srv.URL+"/x", nil)
		srv.Close()
		if got.status != want {
			t.Errorf("fail open %v: %d %q, want %d", open, got.status, got.body, want)
		}
		if !open && got.errorBody(t).Code != sluicehttp.CodeUnavailable {
			t.Errorf("fail closed: body %q, want code %s", got.body, sluicehttp.CodeUnavailable)
		}
		if reported.Load() != 1 {
			t.Errorf("fail open %v: OnError told %d times, want 1", open, reported.Load())
		}
	}
}

func TestAPIKeyEndToEnd(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := apikey.New(db, apikey.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	plaintext, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42",
		RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	if err != nil {
		t.Fatal(err)
	}
	requireKey, err := sluicegin.APIKey(sluicehttp.APIKeyConfig{Manager: keys})
	if err != nil {
		t.Fatal(err)
	}
	r := gin.New()
	r.GET("/me", requireKey, func(c *gin.Context) {
		key, ok := sluicegin.KeyFromContext(c)
		stored, ok2 := c.Get(sluicegin.ContextKey)
		if !ok || !ok2 || stored.(*apikey.Key) != key {
			c.String(http.StatusInternalServerError, "no key in the context")
			return
		}
		c.String(http.StatusOK, key.ReferenceID)
	})
	srv := httptest.NewServer(r)
	defer srv.Close()

	got := get(t, srv.URL+"/me", nil)
	if got.status != http.StatusUnauthorized || got.errorBody(t).Code != sluicehttp.CodeMissingKey {
		t.Errorf("no key: %d %q, want 401 %s", got.status, got.body, sluicehttp.CodeMissingKey)
	}
	wantHeaders(t, got, map[string]string{"WWW-Authenticate": `ApiKey header="x-api-key"`})

	got = get(t, srv.URL+"/me", map[string]string{"x-api-key": plaintext + "x"})
	if got.status != http.StatusUnauthorized || got.errorBody(t).Code != string(apikey.CodeInvalid) {
		t.Errorf("invalid key: %d %q, want 401 %s", got.status, got.body, apikey.CodeInvalid)
	}

	for i := range 2 {
		got = get(t, srv.URL+"/me", map[string]string{"x-api-key": plaintext})
		if got.status != http.StatusOK || string(got.body) != "user-42" {
			t.Errorf("valid key, request %d: %d %q, want 200 user-42", i+1, got.status, got.body)
		}
	}
	clk.Advance(20 * time.Second)
	got = get(t, srv.URL+"/me", map[string]string{"x-api-key": plaintext})
	if b := got.errorBody(t); got.status != http.StatusTooManyRequests || b.Code != string(apikey.CodeRateLimited) || b.RetryAfter != 40 {
		t.Errorf("over the key's rate limit: %d %q, want 429 %s retryAfter 40", got.status, got.body, apikey.CodeRateLimited)
	}
	wantHeaders(t, got, map[string]string{"Retry-After": "40", "RateLimit-Limit": "2", "RateLimit-Remaining": "0"})
}

func TestConstructorErrors(t *testing.T) {
	if _, err := sluicegin.RateLimit(sluicehttp.RateLimitConfig{}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("RateLimit without a limiter: %v, want core.ErrInvalid", err)
	}
	limiter, _ := ratelimit.New(ratelimit.Memory(10))
	if _, err := sluicegin.RateLimit(sluicehttp.RateLimitConfig{Limiter: limiter, Default: ratelimit.Rule{Window: time.Minute, Max: 1}, IPv4Prefix: 40}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("RateLimit with IPv4Prefix 40: %v, want core.ErrInvalid", err)
	}
	if _, err := sluicegin.APIKey(sluicehttp.APIKeyConfig{}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("APIKey(sluicehttp.APIKeyConfig{}): %v, want core.ErrInvalid", err)
	}
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)
	if _, err := sluicegin.APIKey(sluicehttp.APIKeyConfig{Manager: keys, Verify: []apikey.VerifyOption{apikey.Cost(-1)}}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("APIKey with cost -1: %v, want core.ErrInvalid", err)
	}
	if _, err := sluicegin.Wrap(nil); err == nil {
		t.Error("Wrap(nil) returned no error")
	}
}

// Wrap runs any net/http middleware: one that answers aborts the chain,
// one that passes a new request on hands its context to gin.
func TestWrap(t *testing.T) {
	type ctxKey struct{}
	mw := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("deny") != "" {
				http.Error(w, "denied", http.StatusForbidden)
				return
			}
			w.Header().Set("X-Wrapped", "yes")
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, "from net/http")))
		})
	}
	h, err := sluicegin.Wrap(mw)
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	r := gin.New()
	r.Use(h)
	r.GET("/", func(c *gin.Context) {
		ran.Add(1)
		v, _ := c.Request.Context().Value(ctxKey{}).(string)
		c.String(http.StatusOK, v)
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	if got := get(t, srv.URL+"/", nil); got.status != 200 || string(got.body) != "from net/http" || got.header.Get("X-Wrapped") != "yes" {
		t.Errorf("passed: %d %q X-Wrapped %q", got.status, got.body, got.header.Get("X-Wrapped"))
	}
	if got := get(t, srv.URL+"/?deny=1", nil); got.status != http.StatusForbidden {
		t.Errorf("denied: %d, want 403", got.status)
	}
	if ran.Load() != 1 {
		t.Errorf("handler ran %d times, want 1", ran.Load())
	}
}
