package redistest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// Acceptance probe (qa): limits beyond 2^53, which Lua's numbers
// (doubles) do not hold exactly: a request over a rule's Max is denied,
// or the rule refused as bad input, never admitted by a rounded
// comparison, on the lone and the policy path.
func TestAcceptanceHugeCountsExact(t *testing.T) {
	const max = 1<<53 + 1
	for _, policy := range []bool{false, true} {
		s, _, _ := newStorage(t)
		l, err := ratelimit.New(ratelimit.Secondary(s), ratelimit.WithFailOpen())
		if err != nil {
			t.Fatal(err)
		}
		rule := ratelimit.Rule{Name: "huge", Window: time.Hour, Max: max}
		var admitted int64
		for _, cost := range []int64{1 << 51, 1 << 51, 1 << 51, 1 << 51, 1, 1, 1, 1} {
			var d ratelimit.Decision
			if policy {
				d, err = l.ConsumePolicy(context.Background(), "hk", ratelimit.Policy{rule}, cost)
			} else {
				d, err = l.ConsumeN(context.Background(), "hk", rule, cost)
			}
			if errors.Is(err, core.ErrInvalid) && !d.Allowed {
				break // refused as bad input: fine
			}
			if err != nil {
				t.Fatalf("policy %v, cost %d: %v", policy, cost, err)
			}
			if d.Allowed {
				admitted += cost
			}
		}
		t.Logf("policy %v: %d admitted of %d", policy, admitted, int64(max))
		if admitted > max {
			t.Errorf("policy %v: %d units admitted under a Max of %d", policy, admitted, int64(max))
		}
		_ = l.Close()
	}
}
