package ratelimit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
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
