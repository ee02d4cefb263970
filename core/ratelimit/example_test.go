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

// A daily quota that resets at midnight in Berlin: 2 requests a calendar
// day, whatever the hour of the first. 25 October 2026 lasts 25 hours
// there (the clocks go back), and the window ends at local midnight.
func ExampleCalendar() {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2026, 10, 25, 22, 0, 0, 0, berlin)
	limiter, err := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(func() time.Time { return now }))
	if err != nil {
		fmt.Println(err)
		return
	}
	rule, err := ratelimit.ParseRule("2/day@Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < 3; i++ {
		d, _ := limiter.Consume(context.Background(), "user:42", rule)
		fmt.Println(d.Allowed, d.Remaining, d.Reset.In(berlin).Format(time.DateTime), d.RetryAfter)
	}
	start, end := ratelimit.Day.Period(now, berlin)
	fmt.Println(rule, end.Sub(start))
	now = now.Add(2 * time.Hour) // midnight
	d, _ := limiter.Consume(context.Background(), "user:42", rule)
	fmt.Println(d.Allowed, d.Remaining, d.Reset.In(berlin).Format(time.DateTime))
	_, err = ratelimit.ParseRule("2/day@Europe/Atlantis")
	fmt.Println(err)
	// Output:
	// true 1 2026-10-26 00:00:00 0s
	// true 0 2026-10-26 00:00:00 0s
	// false 0 2026-10-26 00:00:00 2h0m0s
	// 2/day@Europe/Berlin 25h0m0s
	// true 1 2026-10-27 00:00:00
	// ratelimit: invalid request: rule "2/day@Europe/Atlantis": unknown time zone "Europe/Atlantis": unknown time zone Europe/Atlantis
}

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
