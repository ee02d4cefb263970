package ratelimit

import "context"

// Storage is where a limiter keeps its counters. Build one with [Database],
// [Secondary] or [Memory]. Times are epoch milliseconds.
type Storage interface {
	// check refuses a configuration the storage cannot serve.
	check(m Mode) error
	// consume counts cost (1 ≤ cost ≤ rule.Max) when it fits.
	consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, attempts int) (state, error)
	// peek reports the key's window without writing; allowed means a
	// request of cost 1 would fit.
	peek(ctx context.Context, key string, rule Rule, now int64) (state, error)
	// prune deletes counters whose window is over at now under every rule
	// whose window is at most longest (0: undeclared), and returns how many.
	prune(ctx context.Context, now, longest int64) (int64, error)
	// reset deletes key's counter; a missing one is not an error.
	reset(ctx context.Context, key string) error
}
