package adaptertest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// rulePolicy is what the policy races check.
const rulePolicy = "a policy of two rules (12 an hour, then 5 a minute) on one key: 64 concurrent requests over one pool or several, " +
	"in each of three minutes, admit exactly 5, 5 and 2 (the hour's rule binding in the third), and the stored counters are " +
	"exactly what was admitted (the minute's rule charged 2 in the third minute, not 5): a denied request charges no rule"

// rlPolicy is the policy the races decide: the long rule first in the
// policy, though the storage orders its writes by key.
var rlPolicy = ratelimit.Policy{{Name: "long", Window: time.Hour, Max: 12}, {Name: "short", Window: time.Minute, Max: 5}}

// rlPolicyRace races policies under mode over pools DBs.
func rlPolicyRace(mode ratelimit.Mode, pools int) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error { return policyRace(ctx, f, mode, pools) })
}

func policyRace(ctx context.Context, f *Fixture, mode ratelimit.Mode, pools int) error {
	clock := NewClock(time.UnixMilli(rlT0))
	ls, err := rlLimiters(f, clock, mode, pools)
	if err != nil {
		return err
	}
	const key = "policy"
	for w, want := range []int64{5, 5, 2} {
		clock.Set(time.UnixMilli(rlT0 + int64(w)*time.Minute.Milliseconds()))
		var admitted atomic.Int64
		var failed atomic.Value
		Release(rlBurst, func(i int) {
			d, err := ls[i%len(ls)].ConsumePolicy(ctx, key, rlPolicy, 1)
			if err != nil {
				failed.Store(err)
			}
			if d.Allowed {
				admitted.Add(1)
			}
		})
		if err, _ := failed.Load().(error); err != nil {
			return fmt.Errorf("minute %d: a request failed: %w", w, err)
		}
		if got := admitted.Load(); got != want {
			return fmt.Errorf("minute %d: admitted %d of %d, want exactly %d", w, got, rlBurst, want)
		}
	}
	d, err := ls[0].CheckPolicy(ctx, key, rlPolicy)
	if err != nil {
		return err
	}
	if d.Rules[0].Remaining != 0 || d.Rules[1].Remaining != 3 {
		return fmt.Errorf("remaining long %d, short %d; want 0 and 3: a denied request charged a rule", d.Rules[0].Remaining, d.Rules[1].Remaining)
	}
	if mode != ratelimit.FixedWindow {
		return nil
	}
	for name, want := range map[string]int64{"long": 12, "short": 2} {
		row, ok, err := f.DB.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "{"+key+"}"+ratelimit.PolicySeparator+name))
		if err != nil || !ok {
			return fmt.Errorf("the %s rule's row: found %v, %v", name, ok, err)
		}
		if got := row.Int("count"); got != want {
			return fmt.Errorf("the %s rule's stored count %d, want exactly %d", name, got, want)
		}
	}
	return nil
}
