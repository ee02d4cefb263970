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

// policyDecision is a hand-built decision of a policy of two rules, as
// ratelimit.Limiter.ConsumePolicy answers, at t0.
func policyDecision(burst, daily ratelimit.RuleDecision) ratelimit.Decision {
	rules := []ratelimit.RuleDecision{burst, daily}
	bind := rules[0]
	if !daily.Allowed && !daily.Shadow || burst.Allowed && daily.Remaining < burst.Remaining {
		bind = daily
	}
	d := ratelimit.Decision{Allowed: (burst.Allowed || burst.Shadow) && (daily.Allowed || daily.Shadow), Limit: bind.Limit,
		Remaining: bind.Remaining, Reset: bind.Reset, RetryAfter: bind.RetryAfter, Rules: rules}
	if !d.Allowed {
		d.DeniedBy = bind.Name
	}
	d.WouldDeny = d.Allowed && (!burst.Allowed || !daily.Allowed)
	return d
}

var (
	burstRule = ratelimit.Rule{Name: "burst", Window: time.Minute, Max: 100}
	dailyRule = ratelimit.Rule{Name: "daily", Window: 24 * time.Hour, Max: 1000}
)

// The and the draft's (section 3) example, written: every rule of
// the policy has its member, in the policy's order, and the written fields
// parse back to the decision.
func TestSetHeadersPolicyDraftExample(t *testing.T) {
	d := policyDecision(
		ratelimit.RuleDecision{Name: "burst", Rule: burstRule, Allowed: true, Limit: 100, Remaining: 50, Reset: t0.Add(30 * time.Second)},
		ratelimit.RuleDecision{Name: "daily", Rule: dailyRule, Allowed: true, Limit: 1000, Remaining: 958, Reset: t0.Add(51202500 * time.Millisecond)})
	h := http.Header{}
	sluicehttp.HeadersIETF.SetHeaders(h, ratelimit.Rule{}, d, t0)
	want := http.Header{
		"Ratelimit-Policy": {`"burst";q=100;w=60, "daily";q=1000;w=86400`},
		"Ratelimit":        {`"burst";r=50;t=30, "daily";r=958;t=51203`},
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got %v\nwant %v", h, want)
	}
	ps, err := sluicehttp.ParseRateLimitPolicy(h)
	if err != nil || !reflect.DeepEqual(ps, []sluicehttp.QuotaPolicy{{Name: "burst", Quota: 100, Window: time.Minute},
		{Name: "daily", Quota: 1000, Window: 24 * time.Hour}}) {
		t.Errorf("parsed back: %+v, %v", ps, err)
	}
	ls, err := sluicehttp.ParseRateLimit(h)
	if err != nil || len(ls) != 2 || ls[0].Remaining != 50 || ls[0].Reset != 30*time.Second || ls[1].Remaining != 958 {
		t.Errorf("parsed back: %+v, %v", ls, err)
	}
}

// A denial: Retry-After is never less than a denying rule's t, a shadow
// rule is reported with sluice-shadow and counts in neither Retry-After
// nor violated-policies.
func TestSetHeadersPolicyDenialAndShadow(t *testing.T) {
	shadowDaily := dailyRule
	shadowDaily.Shadow = true
	d := policyDecision(
		// Denying: its wait is 4.2 s but its window ends in 9.5 s (as a sliding counter may say).
		ratelimit.RuleDecision{Name: "burst", Rule: burstRule, Limit: 100, Reset: t0.Add(9500 * time.Millisecond), RetryAfter: 4200 * time.Millisecond},
		// Shadow, would deny for an hour.
		ratelimit.RuleDecision{Name: "daily", Rule: shadowDaily, Shadow: true, Limit: 1000, Reset: t0.Add(time.Hour), RetryAfter: time.Hour})
	if d.Allowed || d.DeniedBy != "burst" {
		t.Fatalf("fixture: %+v", d)
	}
	h := http.Header{}
	sluicehttp.HeadersIETF.SetHeaders(h, ratelimit.Rule{}, d, t0)
	want := http.Header{
		"Ratelimit-Policy": {`"burst";q=100;w=60, "daily";q=1000;w=86400;sluice-shadow`},
		"Ratelimit":        {`"burst";r=0;t=10, "daily";r=0;t=3600;sluice-shadow`},
		"Retry-After":      {"10"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got %v\nwant %v", h, want)
	}
	ls, _ := sluicehttp.ParseRateLimit(h)
	if len(ls) != 2 || ls[0].Shadow || !ls[1].Shadow {
		t.Errorf("parsed back: %+v", ls)
	}
	// The other styles describe the binding rule, and wait as long.
	h = http.Header{}
	sluicehttp.HeadersDefault.SetHeaders(h, ratelimit.Rule{}, d, t0)
	want = http.Header{"Ratelimit-Limit": {"100"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"10"}, "Retry-After": {"10"}, "X-Retry-After": {"10"}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("default style: got %v\nwant %v", h, want)
	}
}

// A lone rule: named by its Name, or "default"; a shadow lone rule that
// would deny admits, with sluice-shadow, r=0 and no Retry-After.
func TestMiddlewareIETFLoneRules(t *testing.T) {
	f := newHTTP(t, sluicehttp.RateLimitConfig{Headers: sluicehttp.HeadersIETF,
		Default: ratelimit.Rule{Name: "burst", Window: 10 * time.Second, Max: 1},
		Paths:   map[string]ratelimit.Rule{"/new": {Name: "new", Window: 10 * time.Second, Max: 1, Shadow: true}}})
	const ip = "203.0.113.7:1"
	w := f.serve(req{"/", ip, nil})
	if got := w.Header().Get("RateLimit-Policy"); w.Code != 200 || got != `"burst";q=1;w=10` {
		t.Errorf("named: %d %q", w.Code, got)
	}
	f.serve(req{"/new", ip, nil})
	f.clock.Advance(2 * time.Second)
	w = f.serve(req{"/new", ip, nil})
	want := http.Header{"Ratelimit-Policy": {`"new";q=1;w=10;sluice-shadow`}, "Ratelimit": {`"new";r=0;t=8;sluice-shadow`}}
	if w.Code != 200 || !reflect.DeepEqual(w.Header(), want) || f.served != 3 {
		t.Errorf("shadow would-deny: %d %v (served %d), want 200 %v", w.Code, w.Header(), f.served, want)
	}
}

// A rule chosen per request (RuleFor) whose window is not whole seconds
// is reported without w, never with a rounded one.
func TestMiddlewareIETFPerRequestWindow(t *testing.T) {
	f := newHTTP(t, sluicehttp.RateLimitConfig{Headers: sluicehttp.HeadersIETF, Default: perMinute(5),
		RuleFor: func(*http.Request) (ratelimit.Rule, bool) {
			return ratelimit.Rule{Window: 1500 * time.Millisecond, Max: 2}, true
		}})
	w := f.serve(req{"/", "203.0.113.7:1", nil})
	if got := w.Header().Get("RateLimit-Policy"); got != `"default";q=2` || w.Header().Get("RateLimit") != `"default";r=1;t=2` {
		t.Errorf("got %v", w.Header())
	}
}

// A configured rule whose window is not whole seconds is refused under
// HeadersIETF, and only there.
func TestMiddlewareIETFWholeSeconds(t *testing.T) {
	l := newLimiter(t, ratelimit.Memory(10))
	odd := ratelimit.Rule{Window: 1500 * time.Millisecond, Max: 3}
	for _, tc := range []struct {
		cfg  sluicehttp.RateLimitConfig
		want string
	}{
		{sluicehttp.RateLimitConfig{Default: odd}, `RateLimitConfig.Default: rule window 1.5s is not a whole number of seconds`},
		{sluicehttp.RateLimitConfig{Default: perMinute(1), Paths: map[string]ratelimit.Rule{"/a": perMinute(2), "/b/*": odd}},
			`RateLimitConfig.Paths["/b/*"]: rule window 1.5s is not a whole number of seconds, as the RateLimit-Policy field's w must be (HeadersIETF)`},
	} {
		tc.cfg.Limiter, tc.cfg.Headers = l, sluicehttp.HeadersIETF
		mw, err := sluicehttp.RateLimit(tc.cfg)
		if mw != nil || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "sluicehttp: invalid request: "+tc.want) {
			t.Errorf("RateLimit = %v, %v; want ErrInvalid saying %q", mw != nil, err, tc.want)
		}
		for _, style := range []sluicehttp.HeaderStyle{sluicehttp.HeadersDefault, sluicehttp.HeadersLegacy, sluicehttp.HeadersNone} {
			tc.cfg.Headers = style
			if _, err := sluicehttp.RateLimit(tc.cfg); err != nil {
				t.Errorf("%v: %v", style, err)
			}
		}
	}
}

func TestMiddlewareProblemDetails(t *testing.T) {
	for _, style := range []sluicehttp.HeaderStyle{sluicehttp.HeadersIETF, sluicehttp.HeadersNone} {
		f := newHTTP(t, sluicehttp.RateLimitConfig{Headers: style, ProblemDetails: true,
			Default: ratelimit.Rule{Name: "daily", Window: 10 * time.Second, Max: 1}})
		f.serve(req{"/", "203.0.113.7:1", nil})
		f.clock.Advance(2500 * time.Millisecond)
		w := f.serve(req{"/", "203.0.113.7:1", nil})
		if w.Code != 429 || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Fatalf("%v: %d %v", style, w.Code, w.Header())
		}
		var got map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"type": "https://iana.org/assignments/http-problem-types#quota-exceeded",
			"title": "Request cannot be satisfied as assigned quota has been exceeded", "status": 429.0,
			"detail": "Too many requests. Please try again in 8 seconds.", "violated-policies": []any{"daily"},
			"code": "RATE_LIMITED", "retryAfter": 8.0}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: body %s", style, w.Body)
		}
		if ra := w.Header().Get("Retry-After"); style == sluicehttp.HeadersIETF && ra != "8" || style == sluicehttp.HeadersNone && ra != "" {
			t.Errorf("%v: Retry-After %q", style, ra)
		}
	}
}

// A calendar rule's period has no fixed length (a 23- or 25-hour day, a
// month): it is written without w, with t the seconds until local
// midnight.
func TestMiddlewareIETFCalendarRule(t *testing.T) {
	f := newHTTP(t, sluicehttp.RateLimitConfig{Headers: sluicehttp.HeadersIETF,
		Default: ratelimit.Rule{Name: "daily", Calendar: ratelimit.Day, Max: 1000}})
	f.clock.Set(18 * time.Hour) // 18:00 UTC
	w := f.serve(req{"/", "203.0.113.7:1", nil})
	if w.Header().Get("RateLimit-Policy") != `"daily";q=1000` || w.Header().Get("RateLimit") != `"daily";r=999;t=21600` {
		t.Errorf("got %v", w.Header())
	}
}
