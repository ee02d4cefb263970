package ratelimit

import "context"

// Storage is where a limiter keeps its counters. Build one with [Database],
// [Secondary] or [Memory]. Times are epoch milliseconds.
type Storage interface {
	// check refuses a configuration the storage cannot serve.
	check(m Mode) error
	// consume counts cost (1 ≤ cost ≤ rule.Max) when it fits, under the
	// algorithm m names, losing at most attempts races.
	consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, attempts int) (state, error)
	// peek reports the key's state under m without writing; allowed means
	// a request of cost 1 would fit.
	peek(ctx context.Context, key string, rule Rule, now int64, m Mode) (state, error)
	// prune deletes counters whose window is over at now under every rule
	// whose window is at most longest (0: undeclared), and returns how many.
	prune(ctx context.Context, now, longest int64) (int64, error)
	// reset deletes key's counter; a missing one is not an error.
	reset(ctx context.Context, key string) error
}

// state is what a storage reports; times are epoch milliseconds.
type state struct {
	allowed bool
	count   int64 // units counted in the window after the request
	reset   int64 // when the window ends
}

// counter is one key's state as the algorithms read and write it (see
// window.go, sliding.go and gcra.go), and as Memory keeps it.
type counter struct {
	count int64 // the units counted in the window that started at last
	last  int64 // a window's start; under GCRA, the tat
	prev  int64 // SlidingWindow: the previous window's count
	span  int64 // how long after last the counter matters
}
