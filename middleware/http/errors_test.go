package sluicehttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// TestOneShape denies a request in RateLimit and in APIKey and compares what a
// client sees: the same headers on 429, and bodies with the same fields.
func TestOneShape(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	rule := ratelimit.Rule{Window: time.Minute, Max: 1}

	limiter, err := ratelimit.New(ratelimit.Memory(10), ratelimit.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	rl, err := sluicehttp.RateLimit(sluicehttp.RateLimitConfig{Limiter: limiter, Default: rule})
	if err != nil {
		t.Fatal(err)
	}
	db, _ := core.New(memory.New())
	keys, err := apikey.New(db, apikey.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	plaintext, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "u", RateLimit: &apikey.RateLimit{Enabled: true, Window: rule.Window, Max: rule.Max}})
	if err != nil {
		t.Fatal(err)
	}
	ak, err := sluicehttp.APIKey(sluicehttp.APIKeyConfig{Manager: keys})
	if err != nil {
		t.Fatal(err)
	}

	deny := func(h http.Handler) (*httptest.ResponseRecorder, map[string]any) {
		t.Helper()
		var w *httptest.ResponseRecorder
		for range 2 {
			r := httptest.NewRequest("GET", "/x", nil)
			r.RemoteAddr = "203.0.113.7:1"
			r.Header.Set(sluicehttp.DefaultHeader, plaintext)
			w = httptest.NewRecorder()
			h.ServeHTTP(w, r)
		}
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 429 {
			t.Fatalf("second request: %d %s (%v), want 429 and JSON", w.Code, w.Body, err)
		}
		return w, body
	}
	rw, rb := deny(rl(ok))
	aw, ab := deny(ak(ok))
	names := func(h http.Header) []string {
		var s []string
		for k := range h {
			s = append(s, k)
		}
		sort.Strings(s)
		return s
	}
	if r, a := names(rw.Header()), names(aw.Header()); !reflect.DeepEqual(r, a) {
		t.Errorf("429 headers differ:\nratelimit %v\napikey    %v", r, a)
	}
	for _, name := range []string{"Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset", "Retry-After", "X-Retry-After"} {
		if rw.Header().Get(name) != aw.Header().Get(name) {
			t.Errorf("%s: ratelimit %q, apikey %q; the same window should read the same", name, rw.Header().Get(name), aw.Header().Get(name))
		}
	}
	keysOf := func(m map[string]any) string {
		var s []string
		for k := range m {
			s = append(s, k)
		}
		sort.Strings(s)
		return strings.Join(s, ",")
	}
	if r, a := keysOf(rb), keysOf(ab); r != a || r != "code,message,retryAfter,status" {
		t.Errorf("429 body fields: ratelimit %s, apikey %s; want code,message,retryAfter,status in both", r, a)
	}
	if rb["code"] != "RATE_LIMITED" || ab["code"] != "RATE_LIMITED" || rb["retryAfter"] != ab["retryAfter"] {
		t.Errorf("bodies: ratelimit %v, apikey %v", rb, ab)
	}
}
