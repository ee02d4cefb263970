package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// A policy of two limits on one key, charged all or nothing: the burst
// rule denies the third request, which the daily rule then does not
// count; a shadow rule reports what it would deny and denies nothing.
func ExampleLimiter_ConsumePolicy() {
	db, _ := core.New(memory.New()) // your ORM's adapter in production
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	limiter, _ := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(func() time.Time { return now }))
	policy := ratelimit.Policy{
		{Name: "burst", Window: time.Minute, Max: 2},
		{Name: "daily", Window: 24 * time.Hour, Max: 1000},
		{Name: "trial", Window: time.Minute, Max: 1, Shadow: true},
	}
	for range 3 {
		d, err := limiter.ConsumePolicy(context.Background(), "user:42", policy, 1)
		fmt.Printf("allowed=%v would-deny=%v denied-by=%q retry=%v err=%v\n", d.Allowed, d.WouldDeny, d.DeniedBy, d.RetryAfter, err)
		for _, r := range d.Rules {
			fmt.Printf("  %s: allowed=%v remaining=%d\n", r.Name, r.Allowed, r.Remaining)
		}
	}
	// Output:
	// allowed=true would-deny=false denied-by="" retry=0s err=<nil>
	//   burst: allowed=true remaining=1
	//   daily: allowed=true remaining=999
	//   trial: allowed=true remaining=0
	// allowed=true would-deny=true denied-by="" retry=0s err=<nil>
	//   burst: allowed=true remaining=0
	//   daily: allowed=true remaining=998
	//   trial: allowed=false remaining=0
	// allowed=false would-deny=false denied-by="burst" retry=1m0s err=<nil>
	//   burst: allowed=false remaining=0
	//   daily: allowed=true remaining=998
	//   trial: allowed=false remaining=0
}
