package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

func Example() {
	db, _ := core.New(memory.New()) // your ORM's adapter in production
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	limiter, _ := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(func() time.Time { return now }))
	rule := ratelimit.Rule{Window: time.Minute, Max: 2}
	for i := 0; i < 3; i++ {
		d, err := limiter.Consume(context.Background(), "user:42", rule)
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter, err)
	}
	// Output:
	// true 1 0s <nil>
	// true 0 0s <nil>
	// false 0 1m0s <nil>
}

func ExampleLimiter_ConsumeN() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	limiter, _ := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(func() time.Time { return now }))
	rule := ratelimit.Rule{Window: time.Hour, Max: 100}
	ctx := context.Background()
	d, _ := limiter.ConsumeN(ctx, "export:acme", rule, 60) // an expensive request
	fmt.Println(d.Allowed, d.Remaining)
	d, _ = limiter.ConsumeN(ctx, "export:acme", rule, 60)
	fmt.Println(d.Allowed, d.Remaining)
	d, _ = limiter.Check(ctx, "export:acme", rule) // cost 0: look without spending
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// true 40
	// false 40
	// true 40
}

func ExampleSecondary() {
	store := memory.NewStorage() // adapters/redis in production
	limiter, _ := ratelimit.New(ratelimit.Secondary(store))
	d, _ := limiter.Consume(context.Background(), "ip:203.0.113.7", ratelimit.Rule{Window: time.Second, Max: 5})
	fmt.Println(d.Allowed, d.Limit, d.Remaining)
	// Output:
	// true 5 4
}
