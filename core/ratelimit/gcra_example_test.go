package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// ExampleGCRA: 2 per second is a burst of 2, then one every 500 ms.
func ExampleGCRA() {
	db, _ := core.New(memory.New()) // your ORM's adapter in production
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start
	limiter, _ := ratelimit.New(ratelimit.Database(db), ratelimit.WithMode(ratelimit.GCRA),
		ratelimit.WithClock(func() time.Time { return now }))
	rule := ratelimit.Rule{Window: time.Second, Max: 2}
	for _, at := range []time.Duration{0, 0, 0, 300 * time.Millisecond, 500 * time.Millisecond} {
		now = start.Add(at)
		d, err := limiter.Consume(context.Background(), "user:42", rule)
		fmt.Println(at, d.Allowed, d.Remaining, d.RetryAfter, err)
	}
	// Output:
	// 0s true 1 0s <nil>
	// 0s true 0 0s <nil>
	// 0s false 0 500ms <nil>
	// 300ms false 0 200ms <nil>
	// 500ms true 0 0s <nil>
}
