package sluicehttp_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

var apiPolicy = ratelimit.Policy{
	{Name: "burst", Window: 10 * time.Second, Max: 2},
	{Name: "daily", Window: 24 * time.Hour, Max: 5},
	{Name: "new", Window: 10 * time.Second, Max: 1, Shadow: true},
}

// A path's policy decides every rule at once; the fields carry each rule's
// member, a denial charges none and names the rule that denied.
func TestMiddlewarePolicy(t *testing.T) {
	f := newHTTP(t, sluicehttp.RateLimitConfig{Headers: sluicehttp.HeadersIETF, ProblemDetails: true,
		Default: ratelimit.Unlimited, Policies: map[string]ratelimit.Policy{"/api/*": apiPolicy}})
	const ip = "203.0.113.7:1"
	policy := `"burst";q=2;w=10, "daily";q=5;w=86400, "new";q=1;w=10;sluice-shadow`
	for i, want := range []string{
		`"burst";r=1;t=10, "daily";r=4;t=86400, "new";r=0;t=10;sluice-shadow`,
		`"burst";r=0;t=10, "daily";r=3;t=86400, "new";r=0;t=10;sluice-shadow`, // the shadow rule would deny: admitted
	} {
		w := f.serve(req{"/api/items", ip, nil})
		if w.Code != 200 || w.Header().Get("RateLimit-Policy") != policy || w.Header().Get("RateLimit") != want {
			t.Errorf("request %d: %d %v, want RateLimit %s", i+1, w.Code, w.Header(), want)
		}
	}
	f.clock.Advance(3 * time.Second)
	w := f.serve(req{"/api/items", ip, nil})
	if w.Code != 429 || w.Header().Get("Retry-After") != "7" ||
		w.Header().Get("RateLimit") != `"burst";r=0;t=7, "daily";r=3;t=86397, "new";r=0;t=7;sluice-shadow` {
		t.Errorf("denied: %d %v", w.Code, w.Header())
	}
	var p sluicehttp.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || !reflect.DeepEqual(p.ViolatedPolicies, []string{"burst"}) {
		t.Errorf("problem %s, %v", w.Body, err)
	}
	if f.served != 2 {
		t.Errorf("served %d, want 2", f.served)
	}
	// Past burst's window the daily quota, uncharged by the denial, admits again.
	f.clock.Advance(7 * time.Second)
	w = f.serve(req{"/api/items", ip, nil})
	if w.Code != 200 || !strings.Contains(w.Header().Get("RateLimit"), `"daily";r=2;`) {
		t.Errorf("after burst's window: %d %v", w.Code, w.Header())
	}
}

func TestMiddlewarePolicyBadConfig(t *testing.T) {
	l := newLimiter(t, ratelimit.Memory(10))
	for _, tc := range []struct {
		cfg  sluicehttp.RateLimitConfig
		want string
	}{
		{sluicehttp.RateLimitConfig{Paths: map[string]ratelimit.Rule{"/a": perMinute(1)}, Policies: map[string]ratelimit.Policy{"/a": apiPolicy}},
			`RateLimitConfig.Policies["/a"]: the path is in Paths too`},
		{sluicehttp.RateLimitConfig{Policies: map[string]ratelimit.Policy{"/a": {}}}, `RateLimitConfig.Policies["/a"]: empty policy`},
		{sluicehttp.RateLimitConfig{Policies: map[string]ratelimit.Policy{"/a": {apiPolicy[0], apiPolicy[0]}}},
			`RateLimitConfig.Policies["/a"]: policy rules 0 and 1 are both named "burst"`},
		{sluicehttp.RateLimitConfig{Policies: map[string]ratelimit.Policy{"a": apiPolicy}}, `RateLimitConfig.Policies["a"]: a path must start with '/' or '*'`},
		{sluicehttp.RateLimitConfig{Headers: sluicehttp.HeadersIETF,
			Policies: map[string]ratelimit.Policy{"/a": {apiPolicy[0], {Name: "odd", Window: 2500 * time.Millisecond, Max: 1}}}},
			`RateLimitConfig.Policies["/a"][1]: rule window 2.5s is not a whole number of seconds`},
	} {
		tc.cfg.Limiter, tc.cfg.Default = l, perMinute(1)
		mw, err := sluicehttp.RateLimit(tc.cfg)
		if mw != nil || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "sluicehttp: invalid request: "+tc.want) {
			t.Errorf("RateLimit = %v, %v; want ErrInvalid saying %q", mw != nil, err, tc.want)
		}
	}
}

// With Key, requests of one key under one policy share its counters
// whatever their path.
func TestMiddlewarePolicyKey(t *testing.T) {
	f := newHTTP(t, sluicehttp.RateLimitConfig{Default: ratelimit.Unlimited,
		Policies: map[string]ratelimit.Policy{"/a": apiPolicy, "/b": apiPolicy},
		Key:      func(r *http.Request) (string, error) { return "user-1", nil }})
	wantCodes(t, "shared policy", f.codes(req{"/a", "203.0.113.7:1", nil}, req{"/b", "203.0.113.8:1", nil}, req{"/a", "203.0.113.9:1", nil}),
		200, 200, 429)
}
