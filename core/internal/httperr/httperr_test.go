package httperr_test

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
	"github.com/sluice-go/sluice/core/internal/httperr"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

func TestWrite(t *testing.T) {
	w := httptest.NewRecorder()
	w.Header().Set("RateLimit-Limit", "3") // set before: kept
	httperr.Write(w, httperr.Body{Code: "X", Message: "m", Status: 429, RetryAfter: 7})
	want := http.Header{"Ratelimit-Limit": {"3"}, "Content-Type": {"application/json"}, "Retry-After": {"7"}, "X-Retry-After": {"7"}}
	if w.Code != 429 || !reflect.DeepEqual(w.Header(), want) || w.Body.String() != `{"code":"X","message":"m","status":429,"retryAfter":7}`+"\n" {
		t.Errorf("Write: %d %v %s", w.Code, w.Header(), w.Body)
	}
	w = httptest.NewRecorder()
	httperr.Write(w, httperr.Body{Code: "Y", Message: "n", Status: 503})
	want = http.Header{"Content-Type": {"application/json"}}
	if w.Code != 503 || !reflect.DeepEqual(w.Header(), want) || w.Body.String() != `{"code":"Y","message":"n","status":503}`+"\n" {
		t.Errorf("Write without RetryAfter: %d %v %s", w.Code, w.Header(), w.Body)
	}
}

func TestSetRateLimit(t *testing.T) {
	h := http.Header{}
	httperr.SetRateLimit(h, 5, 0, -1)
	if !reflect.DeepEqual(h, http.Header{"Ratelimit-Limit": {"5"}, "Ratelimit-Remaining": {"0"}}) {
		t.Errorf("SetRateLimit(5, 0, -1) = %v", h)
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{-time.Second: 0, 0: 0, time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2} {
		if got := httperr.Seconds(d); got != want {
			t.Errorf("Seconds(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestOneShape denies a request in each middleware and compares what a
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
	rl, err := ratelimit.Middleware(ratelimit.HTTPConfig{Limiter: limiter, Default: rule})
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
	ak, err := keys.Middleware()
	if err != nil {
		t.Fatal(err)
	}

	deny := func(h http.Handler) (*httptest.ResponseRecorder, map[string]any) {
		t.Helper()
		var w *httptest.ResponseRecorder
		for range 2 {
			r := httptest.NewRequest("GET", "/x", nil)
			r.RemoteAddr = "203.0.113.7:1"
			r.Header.Set(apikey.DefaultHeader, plaintext)
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
