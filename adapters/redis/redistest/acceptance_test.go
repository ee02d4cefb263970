package redistest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
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

// Acceptance probe (qa): keys a client controls that hold braces, which
// Redis Cluster reads as hash tags, keep a policy's rules in one slot or
// are refused as bad input: never a cross-slot failure that WithFailOpen
// turns into an admission past the rules.
func TestAcceptancePolicyHostileBraces(t *testing.T) {
	p := ratelimit.Policy{{Name: "a", Window: time.Minute, Max: 3}, {Name: "b", Window: time.Hour, Max: 10}}
	onEachKind(t, func(t *testing.T, s *sluiceredis.Storage, _ redis.UniversalClient, _ func(func(*redis.Client))) {
		l, err := ratelimit.New(ratelimit.Secondary(s), ratelimit.WithFailOpen())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for _, key := range []string{"}x", "{}", "}{", "x}{y", ratelimit.SafeKey("}evil{"), "{" + strings.Repeat("}", 300)} {
			admitted := 0
			for range 6 {
				d, err := l.ConsumePolicy(context.Background(), key, p, 1)
				if err != nil {
					t.Logf("key %q: %v", key, err)
				}
				if d.Allowed {
					admitted++
				}
			}
			if admitted > 3 {
				t.Errorf("key %q: %d admitted under a rule of 3", key, admitted)
			}
		}
	})
}
