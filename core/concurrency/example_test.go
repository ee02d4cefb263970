package concurrency_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core/concurrency"
)

// At most 2 exports per account run at once; a third waits for a slot.
func Example() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now } // time.Now in production
	limiter, err := concurrency.New(concurrency.Memory(), concurrency.WithClock(clock))
	if err != nil {
		panic(err)
	}
	var held []concurrency.Slot
	for i := 1; i <= 3; i++ {
		slot, ok, err := limiter.Acquire(ctx, "export:account-7", 2, time.Minute)
		if err != nil {
			panic(err) // the store failed
		}
		if !ok {
			fmt.Printf("export %d: busy, retry after %v\n", i, slot.RetryAfter)
			continue
		}
		fmt.Printf("export %d: slot %d until %s\n", i, slot.Index, slot.Expires.UTC().Format(time.TimeOnly))
		held = append(held, slot)
	}
	now = now.Add(20 * time.Second)
	released, err := held[0].Release(ctx)
	fmt.Println("released:", released, err)
	slot, ok, _ := limiter.Acquire(ctx, "export:account-7", 2, time.Minute)
	fmt.Printf("export 4: %t, slot %d\n", ok, slot.Index)
	// Output:
	// export 1: slot 0 until 12:01:00
	// export 2: slot 1 until 12:01:00
	// export 3: busy, retry after 1m0s
	// released: true <nil>
	// export 4: true, slot 0
}
