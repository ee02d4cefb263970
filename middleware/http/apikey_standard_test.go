package sluicehttp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// keyDenials are three 429s of TestMiddlewareRateLimitHeaders, made
// on e: each returns the key to send once more for its 429.
var keyDenials = []struct {
	name  string
	setup func(t *testing.T, e *keys, h http.Handler) string
	code  apikey.Code
	// The IETF fields, the legacy headers (Retry-After too, which the
	// IETF style sets alike), and the problem's violated-policies and
	// retryAfter.
	policy, limit string
	legacy        map[string]string
	violated      []string
	retryAfter    int64
}{
	{name: "window spent", code: apikey.CodeRateLimited,
		setup: func(t *testing.T, e *keys, h http.Handler) string {
			key, _ := e.create(t, apikey.CreateParams{RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
			serve(t, h, sluicehttp.DefaultHeader, key)
			serve(t, h, sluicehttp.DefaultHeader, key)
			e.clock.Advance(20*time.Second + 500*time.Millisecond)
			return key
		},
		policy: `"rate-limit";q=2;w=60`, limit: `"rate-limit";r=0;t=40`,
		legacy:   map[string]string{"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0", "Retry-After": "40"},
		violated: []string{"rate-limit"}, retryAfter: 40},
	{name: "quota before its refill", code: apikey.CodeUsageExceeded,
		setup: func(t *testing.T, e *keys, h http.Handler) string {
			key, _ := e.create(t, apikey.CreateParams{Remaining: quota(2), Refill: apikey.Refill{Interval: time.Minute, Amount: 2}, RateLimit: noRateLimit()})
			e.clock.Advance(15 * time.Second)
			serve(t, h, sluicehttp.DefaultHeader, key)
			serve(t, h, sluicehttp.DefaultHeader, key)
			return key
		},
		policy: `"quota";q=2;w=60`, limit: `"quota";r=0;t=45`,
		legacy:   map[string]string{"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0", "Retry-After": "45"},
		violated: []string{"quota"}, retryAfter: 45},
	{name: "quota without refill", code: apikey.CodeUsageExceeded,
		setup: func(t *testing.T, e *keys, h http.Handler) string {
			key, _ := e.create(t, apikey.CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
			serve(t, h, sluicehttp.DefaultHeader, key)
			return key
		},
		policy: ``, limit: `"quota";r=0`,
		legacy:   map[string]string{"X-RateLimit-Remaining": "0"},
		violated: []string{"quota"}, retryAfter: 0},
}

// TestMiddlewareKeyHeaderStyles: [APIKeyConfig].Headers writes a key's
// 429 as [RateLimit] writes a denial: the draft's RateLimit-Policy and
// RateLimit with the key's window ("rate-limit") or quota ("quota") as
// the policy, which ParseRateLimitPolicy and ParseRateLimit read back;
// the legacy X-RateLimit-*; or nothing at all, Retry-After included. A
// quota that never refills names no time: no t, no w, no policy member,
// no Retry-After.
func TestMiddlewareKeyHeaderStyles(t *testing.T) {
	for _, c := range keyDenials {
		for _, style := range []sluicehttp.HeaderStyle{sluicehttp.HeadersIETF, sluicehttp.HeadersLegacy, sluicehttp.HeadersNone} {
			e := newKeys(t)
			h := mw(t, e.m, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), sluicehttp.APIKeyConfig{Headers: style})
			rec, body := serve(t, h, sluicehttp.DefaultHeader, c.setup(t, e, h))
			if rec.Code != 429 || apikey.Code(body.Code) != c.code || body.RetryAfter != c.retryAfter {
				t.Fatalf("%s, %v: %d %+v, want 429 %s retryAfter %d", c.name, style, rec.Code, body, c.code, c.retryAfter)
			}
			want := map[string]string{}
			switch style {
			case sluicehttp.HeadersIETF:
				want = map[string]string{"RateLimit-Policy": c.policy, "RateLimit": c.limit, "Retry-After": c.legacy["Retry-After"]}
				checkParsed(t, c.name, rec.Header())
			case sluicehttp.HeadersLegacy:
				want = c.legacy
			}
			for _, name := range []string{"RateLimit-Policy", "RateLimit", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
				"X-RateLimit-Limit", "X-RateLimit-Remaining", "Retry-After", "X-Retry-After"} {
				if got := rec.Header().Get(name); got != want[name] {
					t.Errorf("%s, %v: %s = %q, want %q", c.name, style, name, got, want[name])
				}
			}
			if reset := rec.Header().Get("X-RateLimit-Reset"); (style == sluicehttp.HeadersLegacy && c.retryAfter > 0) != (reset != "") {
				t.Errorf("%s, %v: X-RateLimit-Reset %q", c.name, style, reset)
			}
		}
	}
}

// checkParsed reads the IETF fields back as a client of sluice does.
func checkParsed(t *testing.T, what string, h http.Header) {
	t.Helper()
	if _, err := sluicehttp.ParseRateLimitPolicy(h); err != nil {
		t.Errorf("%s: RateLimit-Policy %q does not parse: %v", what, h.Get("RateLimit-Policy"), err)
	}
	limits, err := sluicehttp.ParseRateLimit(h)
	if err != nil || len(limits) != 1 || limits[0].Remaining != 0 {
		t.Errorf("%s: RateLimit %q parsed as %+v, %v; want one member with r=0", what, h.Get("RateLimit"), limits, err)
	}
}

// TestMiddlewareKeyProblemDetails: with [APIKeyConfig].ProblemDetails a
// key's 429 is an RFC 9457 body of the draft's quota-exceeded type whose
// violated-policies names the key's window or quota and whose code is the
// Result's; answers other than 429 keep their ErrorBody.
func TestMiddlewareKeyProblemDetails(t *testing.T) {
	for _, c := range keyDenials {
		e := newKeys(t)
		h := mw(t, e.m, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), sluicehttp.APIKeyConfig{Headers: sluicehttp.HeadersIETF, ProblemDetails: true})
		key := c.setup(t, e, h)
		req := httptest.NewRequest(http.MethodGet, "/things", nil)
		req.Header.Set(sluicehttp.DefaultHeader, key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var p sluicehttp.Problem
		if ct := rec.Header().Get("Content-Type"); rec.Code != 429 || ct != "application/problem+json" {
			t.Fatalf("%s: %d %s, want 429 application/problem+json", c.name, rec.Code, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if p.Type != sluicehttp.QuotaExceededType || p.Status != 429 || apikey.Code(p.Code) != c.code ||
			!slices.Equal(p.ViolatedPolicies, c.violated) || p.RetryAfter != c.retryAfter {
			t.Errorf("%s: problem %+v, want %s, violated %q, retryAfter %d", c.name, p, c.code, c.violated, c.retryAfter)
		}
	}
	e := newKeys(t)
	h := mw(t, e.m, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), sluicehttp.APIKeyConfig{ProblemDetails: true})
	if rec, body := serve(t, h, sluicehttp.DefaultHeader, "nope"); rec.Code != 401 || apikey.Code(body.Code) != apikey.CodeInvalid {
		t.Errorf("an invalid key with ProblemDetails: %d %+v, want the 401 ErrorBody", rec.Code, body)
	}
}

// An unknown header style is a configuration error naming the field.
func TestMiddlewareKeyHeaderStyleInvalid(t *testing.T) {
	e := newKeys(t)
	_, err := sluicehttp.APIKey(sluicehttp.APIKeyConfig{Manager: e.m, Headers: sluicehttp.HeaderStyle(9)})
	want := "sluicehttp: invalid request: APIKeyConfig.Headers HeaderStyle(9) is not one of HeadersDefault, HeadersIETF, HeadersLegacy, HeadersNone"
	if err == nil || err.Error() != want {
		t.Errorf("APIKey with HeaderStyle(9): %v, want %q", err, want)
	}
}
