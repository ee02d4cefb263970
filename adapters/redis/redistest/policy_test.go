package redistest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// policyRace is the policy race's policy: the long rule first, so that a
// storage charging rule by rule charges it before the short one denies.
var policyRace = ratelimit.Policy{{Name: "long", Window: time.Hour, Max: 12}, {Name: "short", Window: time.Minute, Max: 5}}

// racePolicy releases 64 goroutines over 4 servers, each with its own
// limiter under mode, on one fresh key, and returns how many were
// admitted and a check's view of each rule's remaining.
func racePolicy(t *testing.T, stores []*sluiceredis.Storage, wrap func(*sluiceredis.Storage) driver.SecondaryStorage, mode ratelimit.Mode) (int64, []int64) {
	t.Helper()
	clock := adaptertest.NewClock(time.UnixMilli(1_767_225_600_000))
	var limiters []*ratelimit.Limiter
	for _, s := range stores {
		l, err := ratelimit.New(ratelimit.Secondary(wrap(s)), ratelimit.WithMode(mode), ratelimit.WithClock(clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		limiters = append(limiters, l)
	}
	var admitted atomic.Int64
	adaptertest.Release(64, func(i int) {
		d, err := limiters[i%len(limiters)].ConsumePolicy(context.Background(), "policy", policyRace, 1)
		if err != nil {
			t.Error(err)
		}
		if d.Allowed {
			admitted.Add(1)
		}
	})
	d, err := limiters[0].CheckPolicy(context.Background(), "policy", policyRace)
	if err != nil {
		t.Fatal(err)
	}
	return admitted.Load(), []int64{d.Rules[0].Remaining, d.Rules[1].Remaining}
}

// TestPolicyRace: a policy of 12 an hour and 5 a minute admits exactly 5
// of 64 concurrent requests from 4 servers, in one script each, and the
// long rule is charged 5, not a unit more: the denied requests charged no
// rule. Fixed windows and GCRA.
func TestPolicyRace(t *testing.T) {
	for _, mode := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.GCRA} {
		stores := servers(t, 4)
		got, left := racePolicy(t, stores, same, mode)
		if got != 5 || left[0] != 7 || left[1] != 0 {
			t.Errorf("%v: admitted %d, remaining long %d short %d; want exactly 5, 7 and 0", mode, got, left[0], left[1])
		}
		if mode != ratelimit.FixedWindow {
			continue
		}
		v, _, err := stores[0].Get(context.Background(), ratelimit.SecondaryPrefix+"{policy}"+ratelimit.PolicySeparator+"long")
		if v != "5" || err != nil {
			t.Errorf("stored long count %q, %v; want 5", v, err)
		}
	}
}

// ruleByRule is the broken policy storage the race must catch: each step
// a bounded increment of its own, in order, with no refund when a later
// one does not fit.
type ruleByRule struct{ *sluiceredis.Storage }

func (r ruleByRule) ApplyPolicy(ctx context.Context, steps []driver.PolicyStep) (bool, error) {
	for i := range steps {
		st := &steps[i]
		c, ok, err := r.IncrementBounded(ctx, st.Key, st.By, st.Max, st.TTL)
		if err != nil {
			return false, err
		}
		st.Fits, st.Value, st.TTLLeft = ok, c.Value, c.TTL
		if ok {
			st.Value -= st.By
		} else {
			return false, nil
		}
	}
	return true, nil
}

// TestPolicyRaceCatchesRuleByRule proves TestPolicyRace can fail.
func TestPolicyRaceCatchesRuleByRule(t *testing.T) {
	got, left := racePolicy(t, servers(t, 4), func(s *sluiceredis.Storage) driver.SecondaryStorage { return ruleByRule{s} }, ratelimit.FixedWindow)
	if got == 5 && left[0] == 7 {
		t.Fatalf("the rule-by-rule storage passed: admitted %d, long remaining %d", got, left[0])
	}
}

// TestPolicyOnEachClientKind: a policy is decided in one script on a plain
// client, a ring and a Cluster (its keys in one slot by their hash tag),
// under fixed windows and GCRA.
func TestPolicyOnEachClientKind(t *testing.T) {
	onEachKind(t, func(t *testing.T, s *sluiceredis.Storage, _ redis.UniversalClient, _ func(func(*redis.Client))) {
		for _, mode := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.GCRA} {
			l, err := ratelimit.New(ratelimit.Secondary(s), ratelimit.WithMode(mode), ratelimit.WithDenialCache(0))
			if err != nil {
				t.Fatal(err)
			}
			p := ratelimit.Policy{{Name: "a", Window: time.Minute, Max: 2}, {Name: "b", Window: time.Hour, Max: 5}}
			key := "kind:" + mode.String()
			for i, want := range []bool{true, true, false} {
				d, err := l.ConsumePolicy(context.Background(), key, p, 1)
				if err != nil || d.Allowed != want || d.Rules[1].Remaining != 5-min(int64(i)+1, 2) {
					t.Fatalf("%v request %d: %+v, %v; want allowed %v", mode, i, d, err, want)
				}
			}
		}
	})
}
