package adaptertest

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/ratelimit"
)

var allModes = []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.BetterAuthWindow, ratelimit.SlidingWindow, ratelimit.GCRA}

// memoryEdges is the edge check on ratelimit.Memory.
func memoryEdges(ops int) rlEdgeSubject {
	return rlEdgeSubject{
		newLimiter: func(mode ratelimit.Mode, clock func() time.Time) (*ratelimit.Limiter, error) {
			return ratelimit.New(ratelimit.Memory(64), ratelimit.WithMode(mode), ratelimit.WithClock(clock))
		},
		modes: allModes,
		ops:   ops,
	}
}

func TestRateLimitEdgesMemory(t *testing.T) {
	for seed := range uint64(4) {
		if err := checkRateLimitEdges(context.Background(), memoryEdges(32), seed); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
	}
}
