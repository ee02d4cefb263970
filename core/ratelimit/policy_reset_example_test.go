package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// An operator clears a client a policy limits: Reset of the key alone
// leaves the policy's counters, ResetPolicy clears each rule's.
func ExampleLimiter_ResetPolicy() {
	db, _ := core.New(memory.New())
	limiter, _ := ratelimit.New(ratelimit.Database(db))
	policy := ratelimit.Policy{
		{Name: "burst", Window: time.Minute, Max: 1},
		{Name: "daily", Window: 24 * time.Hour, Max: 100},
	}
	ctx := context.Background()
	limiter.ConsumePolicy(ctx, "user:42", policy, 1)
	d, _ := limiter.ConsumePolicy(ctx, "user:42", policy, 1)
	fmt.Println("before:", d.Allowed, d.DeniedBy)
	_ = limiter.Reset(ctx, "user:42")
	d, _ = limiter.ConsumePolicy(ctx, "user:42", policy, 1)
	fmt.Println("after Reset:", d.Allowed, d.DeniedBy)
	_ = limiter.ResetPolicy(ctx, "user:42", policy)
	d, _ = limiter.ConsumePolicy(ctx, "user:42", policy, 1)
	fmt.Println("after ResetPolicy:", d.Allowed, d.Rules[1].Remaining)
	// Output:
	// before: false burst
	// after Reset: false burst
	// after ResetPolicy: true 99
}
