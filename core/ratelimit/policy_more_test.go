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
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// TestPolicyLongKeys: a policy on the longest key SafeKey makes, under
// the longest name, is stored (its rules' names digested to fit the key
// column) on every storage, and two such keys differing only at the end
// keep separate counters.
func TestPolicyLongKeys(t *testing.T) {
	ctx := context.Background()
	name := strings.Repeat("n", ratelimit.MaxRuleNameLength)
	p := ratelimit.Policy{{Name: name, Window: time.Minute, Max: 1}, {Name: "b", Window: time.Hour, Max: 5}}
	a := ratelimit.SafeKey(strings.Repeat("é", 200) + "a")
	b := ratelimit.SafeKey(strings.Repeat("é", 200) + "b")
	eachBackend(t, func(t *testing.T, be backend, c *clock) {
		l := newLimiter(t, be.storage(c), ratelimit.WithClock(c.Now))
		for _, key := range []string{a, b} {
			for i, want := range []bool{true, false} {
				d, err := l.ConsumePolicy(ctx, key, p, 1)
				if err != nil || d.Allowed != want {
					t.Fatalf("key %q… request %d: %+v, %v; want allowed %v", key[:8], i, d, err, want)
				}
			}
		}
	})
}

// TestPolicyObserved: the observer sees a policy's decision, its policy,
// the binding rule and a shadow outcome.
func TestPolicyObserved(t *testing.T) {
	var events []ratelimit.Event
	db, _ := core.New(memory.New())
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithObserver(func(_ context.Context, e ratelimit.Event) { events = append(events, e) }))
	p := ratelimit.Policy{{Name: "hard", Window: time.Minute, Max: 2}, {Name: "trial", Window: time.Minute, Max: 1, Shadow: true}}
	for range 3 {
		if _, err := l.ConsumePolicy(context.Background(), "obs", p, 1); err != nil {
			t.Fatal(err)
		}
	}
	want := []struct {
		outcome, rule string
	}{{"allowed", "hard"}, {"shadow", "hard"}, {"denied", "hard"}}
	if len(events) != len(want) {
		t.Fatalf("%d events, want %d", len(events), len(want))
	}
	for i, w := range want {
		e := events[i]
		if e.Outcome() != w.outcome || e.Rule.Name != w.rule || len(e.Policy) != 2 || len(e.Decision.Rules) != 2 {
			t.Errorf("event %d: outcome %s, rule %q, policy %d rules, decision %d rules; want %s, %q",
				i, e.Outcome(), e.Rule.Name, len(e.Policy), len(e.Decision.Rules), w.outcome, w.rule)
		}
	}
}

// TestLoneRuleDecisionAllocatesNothing: the lone rule's path stays free of
// allocations on Memory storage, shadow rules included.
func TestLoneRuleDecisionAllocatesNothing(t *testing.T) {
	c := newClock()
	l := newLimiter(t, ratelimit.Memory(100), ratelimit.WithClock(c.Now))
	ctx := context.Background()
	for _, rule := range []ratelimit.Rule{{Window: time.Hour, Max: 1 << 40}, {Name: "s", Window: time.Hour, Max: 1, Shadow: true}} {
		if _, err := l.Consume(ctx, "alloc", rule); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = l.Consume(ctx, "alloc", rule) }); n != 0 {
			t.Errorf("%+v: %v allocations per decision, want 0", rule, n)
		}
	}
}

// TestResetPolicy: ResetPolicy clears every rule's counter; Reset on the
// key clears none of them.
func TestResetPolicy(t *testing.T) {
	ctx := context.Background()
	p := ratelimit.Policy{{Name: "a", Window: time.Minute, Max: 1}, {Name: "b", Window: time.Hour, Max: 3}}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		for _, m := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.SlidingWindow} {
			l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithMode(m), ratelimit.WithDenialCache(0))
			key := "reset:" + m.String()
			if d, err := l.ConsumePolicy(ctx, key, p, 1); err != nil || !d.Allowed {
				t.Fatalf("%v: first: %+v, %v", m, d, err)
			}
			if err := l.ResetRule(ctx, key, p[0]); err != nil {
				t.Fatal(err)
			}
			if d, err := l.ConsumePolicy(ctx, key, p, 1); err != nil || d.Allowed {
				t.Fatalf("%v: after resetting the key alone: %+v, %v; want still denied", m, d, err)
			}
			if err := l.ResetPolicy(ctx, key, p); err != nil {
				t.Fatal(err)
			}
			if d, err := l.ConsumePolicy(ctx, key, p, 1); err != nil || !d.Allowed || d.Rules[1].Remaining != 2 {
				t.Fatalf("%v: after ResetPolicy: %+v, %v; want admitted, b remaining 2", m, d, err)
			}
		}
	})
}

// TestPolicyWithWriteCombining: a limiter with write combining decides
// policies exactly (each alone, in its transaction), beside combined lone
// requests on the same key.
func TestPolicyWithWriteCombining(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		if b.db == nil {
			t.Skip("write combining needs Database storage")
		}
		s := b.storage(c)
		var ls []*ratelimit.Limiter
		for range 3 {
			ls = append(ls, newLimiter(t, s, ratelimit.WithClock(c.Now), ratelimit.WithWriteCombining()))
		}
		lone := ratelimit.Rule{Window: time.Hour, Max: 7}
		var admitted, loneAdmitted atomic.Int64
		testrace.Release(80, func(i int) {
			l := ls[i%len(ls)]
			if i%2 == 0 {
				d, err := l.ConsumePolicy(context.Background(), "comb", racePolicy, 1)
				if err != nil {
					t.Error(err)
				}
				if d.Allowed {
					admitted.Add(1)
				}
				return
			}
			d, err := l.Consume(context.Background(), "comb", lone)
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				loneAdmitted.Add(1)
			}
		})
		if admitted.Load() != 5 || loneAdmitted.Load() != 7 {
			t.Fatalf("admitted %d policy requests and %d lone ones; want exactly 5 and 7", admitted.Load(), loneAdmitted.Load())
		}
	})
}

// TestPolicyNeedsApplier: a secondary storage without driver.PolicyApplier
// refuses policies, at CheckPolicyRules and at the first decision, with
// nothing written.
func TestPolicyNeedsApplier(t *testing.T) {
	store := memory.NewStorage()
	// plainSecondary hides every optional capability, PolicyApplier too.
	l := newLimiter(t, ratelimit.Secondary(plainSecondary{store}))
	p := ratelimit.Policy{{Name: "a", Window: time.Minute, Max: 1}}
	if err := l.CheckPolicyRules(p); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "PolicyApplier") {
		t.Errorf("CheckPolicyRules: %v; want ErrInvalid naming driver.PolicyApplier", err)
	}
	d, err := l.ConsumePolicy(context.Background(), "k", p, 1)
	if !errors.Is(err, core.ErrInvalid) || d.Allowed || store.Len() != 0 {
		t.Errorf("ConsumePolicy: %+v, %v, %d entries; want denied, ErrInvalid, nothing stored", d, err, store.Len())
	}
}

// policySlidingRace races 40 requests over three limiters on s under
// SlidingWindow, on a fresh key, for a policy whose long rule comes
// first: exactly the short rule's 5 are admitted and the long rule is
// charged those 5 alone.
func policySlidingRace(t *testing.T, s ratelimit.Storage, c *clock, key string) error {
	p := ratelimit.Policy{racePolicy[1], racePolicy[0]}
	var ls []*ratelimit.Limiter
	for range 3 {
		ls = append(ls, newLimiter(t, s, ratelimit.WithClock(c.Now), ratelimit.WithMode(ratelimit.SlidingWindow)))
	}
	c.Set(30 * time.Second) // inside the short rule's first window
	if got := policyRace(t, ls, key, p, 40); got != 5 {
		return fmt.Errorf("admitted %d, want exactly 5", got)
	}
	d, err := ls[0].CheckPolicy(context.Background(), key, p)
	if err != nil {
		return err
	}
	if d.Rules[0].Remaining != 7 || d.Rules[1].Remaining != 0 {
		return fmt.Errorf("remaining long %d, short %d; want 7 and 0: a denied request charged a rule", d.Rules[0].Remaining, d.Rules[1].Remaining)
	}
	return nil
}

// TestPolicySlidingRace: exact under SlidingWindow on every storage, and
// the race fails on a storage charging rule by rule.
func TestPolicySlidingRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		if err := policySlidingRace(t, b.storage(c), c, "slide"); err != nil {
			t.Error(err)
		}
		c2 := newClock()
		if err := policySlidingRace(t, ratelimit.OneByOne(b.storage(c2)), c2, "slide-broken"); err == nil || !strings.Contains(err.Error(), "charged a rule") {
			t.Error("the sliding race passed a storage that charges rule by rule")
		}
	})
}
