package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// policyModes returns the modes b serves.
func policyModes(b backend) []ratelimit.Mode {
	ms := []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.SlidingWindow, ratelimit.GCRA}
	if b.betterOK {
		ms = append(ms, ratelimit.BetterAuthWindow)
	}
	return ms
}

// TestPolicyAllOrNothing: on every storage and mode, a policy admits only
// when every rule admits, a denial charges no rule, and the decision names
// the binding rule and reports each rule.
func TestPolicyAllOrNothing(t *testing.T) {
	ctx := context.Background()
	p := ratelimit.Policy{{Name: "burst", Window: time.Minute, Max: 2}, {Name: "daily", Window: time.Hour, Max: 5}}
	q := ratelimit.Policy{{Name: "wide", Window: time.Minute, Max: 5}, {Name: "narrow", Window: time.Hour, Max: 1}}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		for _, m := range policyModes(b) {
			t.Run(m.String(), func(t *testing.T) {
				l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithMode(m))
				key := "p:" + m.String()
				for i, want := range []bool{true, true, false, false} {
					d, err := l.ConsumePolicy(ctx, key, p, 1)
					if err != nil || d.Allowed != want || len(d.Rules) != 2 {
						t.Fatalf("request %d: %+v, %v; want allowed %v", i, d, err, want)
					}
					daily := d.Rules[1]
					if daily.Name != "daily" || daily.Remaining != 5-min(int64(i)+1, 2) {
						t.Fatalf("request %d: daily %+v, want remaining %d: a denial charges no rule", i, daily, 5-min(int64(i)+1, 2))
					}
					if !want && (d.DeniedBy != "burst" || d.Remaining != 0 || d.Limit != 2 || d.RetryAfter <= 0 || d.Rules[0].Allowed) {
						t.Fatalf("request %d: %+v; want denied by burst, its limit and wait on top", i, d)
					}
					if want && (d.DeniedBy != "" || d.Limit != 2 || d.Remaining != 1-int64(i)) {
						t.Fatalf("request %d: %+v; want burst binding with %d remaining", i, d, 1-i)
					}
				}
				// The second rule denies: the first is not charged.
				key = "q:" + m.String()
				for i, want := range []bool{true, false, false} {
					d, err := l.ConsumePolicy(ctx, key, q, 1)
					if err != nil || d.Allowed != want || d.Rules[0].Remaining != 4 {
						t.Fatalf("q request %d: %+v, %v; want allowed %v and wide remaining 4", i, d, err, want)
					}
					if !want && d.DeniedBy != "narrow" {
						t.Fatalf("q request %d: denied by %q, want narrow", i, d.DeniedBy)
					}
				}
				d, err := l.CheckPolicy(ctx, key, q)
				if err != nil || d.Allowed || d.Rules[0].Remaining != 4 || !d.Rules[0].Allowed || d.DeniedBy != "narrow" {
					t.Fatalf("check: %+v, %v", d, err)
				}
			})
		}
	})
}

// TestPolicyShadow: a shadow rule of a policy counts while it admits,
// reports WouldDeny, and never denies; a denied policy charges it neither.
func TestPolicyShadow(t *testing.T) {
	ctx := context.Background()
	p := ratelimit.Policy{{Name: "enforced", Window: time.Minute, Max: 4}, {Name: "trial", Window: time.Minute, Max: 2, Shadow: true}}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now))
		want := []struct {
			allowed, would bool
			trial          int64
		}{{true, false, 1}, {true, false, 0}, {true, true, 0}, {true, true, 0}, {false, false, 0}}
		for i, w := range want {
			d, err := l.ConsumePolicy(ctx, "shadow", p, 1)
			if err != nil || d.Allowed != w.allowed || d.WouldDeny != w.would || d.Rules[1].Remaining != w.trial || !d.Rules[1].Shadow {
				t.Fatalf("request %d: %+v, %v; want allowed %v, would deny %v, trial remaining %d", i, d, err, w.allowed, w.would, w.trial)
			}
			if w.allowed && d.Limit != 4 {
				t.Fatalf("request %d: binding limit %d, want the enforced rule's 4 (shadow rules do not bind)", i, d.Limit)
			}
		}
		// A shadow rule that fits is not charged by a denied policy.
		q := ratelimit.Policy{{Name: "trial", Window: time.Minute, Max: 3, Shadow: true}, {Name: "hard", Window: time.Minute, Max: 1}}
		for i := range 3 {
			d, err := l.ConsumePolicy(ctx, "shadow2", q, 1)
			if err != nil || d.Allowed != (i == 0) || d.Rules[0].Remaining != 2 {
				t.Fatalf("q request %d: %+v, %v; want trial remaining 2", i, d, err)
			}
		}
	})
}

// TestPolicyBadInput: a bad policy, key or cost is refused before any
// write, naming what is wrong.
func TestPolicyBadInput(t *testing.T) {
	ctx := context.Background()
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithLongestWindow(time.Hour))
		ok := ratelimit.Rule{Name: "a", Window: time.Minute, Max: 3}
		for _, x := range []struct {
			key  string
			p    ratelimit.Policy
			cost int64
			want string
		}{
			{"k", nil, 1, "empty policy"},
			{"k", ratelimit.Policy{ok, ok}, 1, "both named"},
			{"k", ratelimit.Policy{ok, {Window: time.Minute, Max: 1}}, 1, "no name"},
			{"k", ratelimit.Policy{ok, {Name: "b", Window: 2 * time.Hour, Max: 1}}, 1, "is longer than the declared longest window"},
			{"k", ratelimit.Policy{ok}, -1, "cost -1"},
			{"", ratelimit.Policy{ok}, 1, "empty key"},
		} {
			before := b.calls()
			d, err := l.ConsumePolicy(ctx, x.key, x.p, x.cost)
			if !errors.Is(err, core.ErrInvalid) || d.Allowed || !strings.Contains(err.Error(), x.want) {
				t.Errorf("%v cost %d: %+v, %v; want ErrInvalid with %q", x.p, x.cost, d, err, x.want)
			}
			if n := b.calls() - before; n != 0 {
				t.Errorf("%v: %d storage calls before refusing", x.p, n)
			}
		}
		if err := l.CheckPolicyRules(ratelimit.Policy{ok, ok}); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("CheckPolicyRules: %v", err)
		}
	})
}

// TestPolicyDenialCache: a rule found full is cached under its own key and
// rule; the policy is then denied without the storage, and the same key
// under a lone rule, or another policy, is not.
func TestPolicyDenialCache(t *testing.T) {
	ctx := context.Background()
	p := ratelimit.Policy{{Name: "burst", Window: time.Minute, Max: 1}, {Name: "daily", Window: time.Hour, Max: 10}}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now))
		for i := range 2 {
			if d, err := l.ConsumePolicy(ctx, "cached", p, 1); err != nil || d.Allowed != (i == 0) {
				t.Fatalf("request %d: %+v, %v", i, d, err)
			}
		}
		before := b.calls()
		d, err := l.ConsumePolicy(ctx, "cached", p, 1)
		if err != nil || d.Allowed || d.DeniedBy != "burst" || d.RetryAfter != time.Minute || d.Rules[1].Remaining != 9 || !d.Rules[1].Allowed {
			t.Fatalf("cached: %+v, %v; want denied by burst, daily read: 9 remaining", d, err)
		}
		if n := b.calls() - before; b.name != "memory" && n != 1 {
			t.Errorf("%d storage calls for a cached denial, want 1: the other rule's read", n)
		}
		// The lone rule on the same key has its own counter.
		if d, err := l.Consume(ctx, "cached", p[0]); err != nil || !d.Allowed {
			t.Errorf("lone rule on the policy's key: %+v, %v; want admitted", d, err)
		}
		c.Set(time.Minute)
		if d, err := l.ConsumePolicy(ctx, "cached", p, 1); err != nil || !d.Allowed || d.Rules[1].Remaining != 8 {
			t.Errorf("next window: %+v, %v; want admitted, daily remaining 8", d, err)
		}
	})
}

// policyRace releases n requests on one key over limiters, at the clock's
// instant, and returns how many were admitted.
func policyRace(t *testing.T, ls []*ratelimit.Limiter, key string, p ratelimit.Policy, n int) int64 {
	var admitted atomic.Int64
	testrace.Release(n, func(i int) {
		d, err := ls[i%len(ls)].ConsumePolicy(context.Background(), key, p, 1)
		if err != nil {
			t.Error(err)
		}
		if d.Allowed {
			admitted.Add(1)
		}
	})
	return admitted.Load()
}

// racePolicy is the race tests' policy: 5 a minute, 12 an hour.
var racePolicy = ratelimit.Policy{{Name: "short", Window: time.Minute, Max: 5}, {Name: "long", Window: time.Hour, Max: 12}}

// checkPolicyRace races 40 requests a window over three limiters sharing
// one storage, three windows of the short rule: exactly 5, 5 and 2 are
// admitted (the long rule binding in the third), and a check then finds
// the short rule charged 2, not 5: the requests the long rule denied
// charged neither rule.
func checkPolicyRace(t *testing.T, s ratelimit.Storage, c *clock, m ratelimit.Mode, key string) error {
	var ls []*ratelimit.Limiter
	for range 3 {
		ls = append(ls, newLimiter(t, s, ratelimit.WithClock(c.Now), ratelimit.WithMode(m)))
	}
	for w, want := range []int64{5, 5, 2} {
		c.Set(time.Duration(w) * time.Minute)
		if got := policyRace(t, ls, key, racePolicy, 40); got != want {
			return fmt.Errorf("window %d: admitted %d, want exactly %d", w, got, want)
		}
	}
	d, err := ls[0].CheckPolicy(context.Background(), key, racePolicy)
	if err != nil {
		return err
	}
	if d.Rules[0].Remaining != 3 || d.Rules[1].Remaining != 0 {
		return fmt.Errorf("stored: short remaining %d, long %d; want 3 and 0: a denied request charged a rule", d.Rules[0].Remaining, d.Rules[1].Remaining)
	}
	return nil
}

// TestPolicyRace: exact under races on every storage, under fixed windows
// and GCRA (whose short rule leaks 5 a minute and long one 12 an hour,
// so the same counts hold).
func TestPolicyRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		s := b.storage(c)
		for _, m := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.GCRA} {
			c.Set(0)
			if err := checkPolicyRace(t, s, c, m, "race:"+m.String()); err != nil {
				t.Errorf("%v: %v", m, err)
			}
		}
	})
}

// TestPolicyRaceCatchesOneByOne: the race test fails on a storage that
// charges a policy's rules one by one without refunds.
func TestPolicyRaceCatchesOneByOne(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		err := checkPolicyRace(t, ratelimit.OneByOne(b.storage(c)), c, ratelimit.FixedWindow, "race")
		if err == nil || !strings.Contains(err.Error(), "charged a rule") {
			t.Errorf("the race test passed a storage that charges one by one: %v", err)
		}
	})
}
