package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// A sliding window admits no burst of 2×Max across a window boundary: the
// previous window's count weighs by the part of it the last minute still
// covers.
func Example_slidingWindow() {
	db, _ := core.New(memory.New()) // your ORM's adapter in production
	now := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	limiter, _ := ratelimit.New(ratelimit.Database(db),
		ratelimit.WithMode(ratelimit.SlidingWindow),
		ratelimit.WithClock(func() time.Time { return now }))
	rule := ratelimit.Rule{Window: time.Minute, Max: 10}
	ctx := context.Background()

	d, _ := limiter.ConsumeN(ctx, "user:42", rule, 10) // the whole minute at 12:00:30
	fmt.Println(d.Allowed, d.Remaining)

	now = now.Add(30 * time.Second) // 12:01:00, a new window: the 10 still weigh 10
	d, _ = limiter.Consume(ctx, "user:42", rule)
	fmt.Println(d.Allowed, d.Remaining, d.RetryAfter) // one unit fits once they weigh 9

	now = now.Add(30 * time.Second) // 12:01:30: they weigh 5
	d, _ = limiter.ConsumeN(ctx, "user:42", rule, 5)
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// true 0
	// false 0 6s
	// true 0
}
