package adaptertest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/concurrency"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// FuzzRateLimitEdges decides a sequence of requests under any rule (window
// in nanoseconds, Max) and mode on ratelimit.Memory and compares every
// decision with the big-integer model: the first request costs cost, the
// rest are drawn from seed. Its seed corpus is in
// testdata/fuzz/FuzzRateLimitEdges.
func FuzzRateLimitEdges(f *testing.F) {
	f.Fuzz(func(t *testing.T, mode uint8, window, mx, cost int64, seed uint64) {
		m := allModes[int(mode)%len(allModes)]
		rule := ratelimit.Rule{Window: time.Duration(window), Max: mx}
		ops := edgeOps(rand.New(rand.NewPCG(seed, 0)), m, rule, 8, true)
		ops[0].cost = cost
		if err := checkEdgeRule(context.Background(), memoryEdges(0), m, rule, "fuzz", ops); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzConcurrencyEdges acquires, renews and releases a lease of any length
// with any n on concurrency.Memory, checked as the Edges case checks the
// edges. Its seed corpus is in testdata/fuzz/FuzzConcurrencyEdges.
func FuzzConcurrencyEdges(f *testing.F) {
	f.Fuzz(func(t *testing.T, n int, lease int64) {
		clock := NewClock(time.UnixMilli(rlT0))
		l, err := concurrency.New(concurrency.Memory(), concurrency.WithClock(clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		if err := ccEdge(context.Background(), l, clock, n, time.Duration(lease)); err != nil {
			t.Fatalf("n %d, lease %d ns: %v", n, lease, err)
		}
	})
}
