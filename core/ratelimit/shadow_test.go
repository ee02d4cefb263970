package ratelimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// TestShadowRule: a lone shadow rule counts while it admits, reports what
// it would deny as WouldDeny and never denies, on every storage; the
// denial cache and Max 0 included.
func TestShadowRule(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := newClock()
			l, err := ratelimit.New(b.storage(c), ratelimit.WithClock(c.Now))
			if err != nil {
				t.Fatal(err)
			}
			rule := ratelimit.Rule{Window: time.Minute, Max: 2, Name: "trial", Shadow: true}
			want := []struct {
				would     bool
				remaining int64
			}{{false, 1}, {false, 0}, {true, 0}, {true, 0}}
			for i, w := range want {
				d, err := l.Consume(ctx, "shadow:"+b.name, rule)
				if err != nil || !d.Allowed || d.WouldDeny != w.would || d.Remaining != w.remaining || d.RetryAfter != 0 || d.DeniedBy != "" {
					t.Fatalf("request %d: %+v, %v; want allowed, would deny %v, remaining %d", i, d, err, w.would, w.remaining)
				}
			}
			// The same rule enforced: the shadow rule counted what it admitted.
			rule.Shadow = false
			d, err := l.Consume(ctx, "shadow:"+b.name, rule)
			if err != nil || d.Allowed || d.WouldDeny {
				t.Fatalf("enforced: %+v, %v; want denied", d, err)
			}
			d, err = l.Consume(ctx, "shadow0:"+b.name, ratelimit.Rule{Window: time.Minute, Shadow: true})
			if err != nil || !d.Allowed || !d.WouldDeny {
				t.Fatalf("Max 0 shadow: %+v, %v; want allowed, would deny", d, err)
			}
			d, err = l.Consume(ctx, "plain:"+b.name, ratelimit.Rule{Window: time.Minute})
			if err != nil || d.Allowed || d.WouldDeny {
				t.Fatalf("Max 0: %+v, %v; want denied", d, err)
			}
		})
	}
}

// TestShadowStorageFailure: a shadow rule admits when the storage fails,
// error returned; bad input is still denied.
func TestShadowStorageFailure(t *testing.T) {
	down, _ := core.New(broken{memory.New()})
	l := newLimiter(t, ratelimit.Database(down))
	rule := ratelimit.Rule{Window: time.Minute, Max: 5, Shadow: true}
	d, err := l.Consume(context.Background(), "k", rule)
	if !errors.Is(err, errBroken) || !d.Allowed {
		t.Fatalf("storage failure: %+v, %v; want allowed with the error", d, err)
	}
	d, err = l.Consume(context.Background(), "", rule)
	if !errors.Is(err, core.ErrInvalid) || d.Allowed {
		t.Fatalf("bad key: %+v, %v; want denied, ErrInvalid", d, err)
	}
}

// TestRuleNames: names are checked with the rule, and PerRule turns a lone
// decision into one RuleDecision.
func TestRuleNames(t *testing.T) {
	for _, bad := range []string{"has space", "quote\"", "é", strings.Repeat("n", ratelimit.MaxRuleNameLength+1)} {
		err := ratelimit.Rule{Window: time.Second, Max: 1, Name: bad}.Validate()
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "rule name") {
			t.Errorf("name %q: %v; want ErrInvalid naming the rule name", bad, err)
		}
	}
	if err := (ratelimit.Rule{Window: time.Second, Max: 1, Name: "burst-1_a.b"}).Validate(); err != nil {
		t.Errorf("good name: %v", err)
	}
	d := ratelimit.Decision{Allowed: true, Limit: 3, Remaining: 2}
	pr := d.PerRule()
	if len(pr) != 1 || pr[0].Name != "default" || !pr[0].Allowed || pr[0].Limit != 3 || pr[0].Remaining != 2 {
		t.Errorf("PerRule: %+v", pr)
	}
	rule := ratelimit.Rule{Window: time.Second, Max: 3, Name: "burst", Shadow: true}
	d.WouldDeny = true
	pr = d.PerRuleOf(rule)
	if len(pr) != 1 || pr[0].Name != "burst" || pr[0].Allowed || !pr[0].Shadow || pr[0].Rule != rule {
		t.Errorf("PerRuleOf: %+v", pr)
	}
}

// TestPolicyValidate: a policy's bad input, each named.
func TestPolicyValidate(t *testing.T) {
	ok := ratelimit.Rule{Window: time.Second, Max: 1, Name: "a"}
	for _, c := range []struct {
		p    ratelimit.Policy
		want string
	}{
		{nil, "empty policy"},
		{ratelimit.Policy{}, "empty policy"},
		{ratelimit.Policy{ok, {Window: time.Second, Max: 1}}, "rule 1 has no name"},
		{ratelimit.Policy{ok, ok}, `rules 0 and 1 are both named "a"`},
		{ratelimit.Policy{ok, {Window: -time.Second, Max: 1, Name: "b"}}, `policy rule 1 ("b"): rule window -1s must be positive`},
		{ratelimit.Policy{{Window: time.Second, Max: 1, Name: "a b"}}, `rule name "a b"`},
	} {
		err := c.p.Validate()
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want ErrInvalid with %q", c.p, err, c.want)
		}
	}
	if err := (ratelimit.Policy{ok, {Window: time.Hour, Max: 9, Name: "b", Shadow: true}}).Validate(); err != nil {
		t.Errorf("good policy: %v", err)
	}
}
