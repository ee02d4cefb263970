package main

import (
	"context"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// coldLimiter is the cold-keys decision: a limiter made now, as a process
// that has just started makes one, which remembers no key's window start.
// Its schema check runs here, once, as a process's first decision would
// run it; a failure shows in every decision of the cell.
func (e *sqlEnv) coldLimiter(o orm, opts []ratelimit.Option) decideFunc {
	keyOf, max := e.rateLimitKey(coldKeys)
	lim, err := ratelimit.New(ratelimit.Database(o.db), opts...)
	if err == nil {
		err = lim.CheckSchema(context.Background())
	}
	return func(ctx context.Context, i int) (bool, error) {
		if err != nil {
			return false, err
		}
		d, err := lim.Consume(ctx, keyOf(i), ratelimit.Rule{Window: window, Max: max})
		return d.Allowed, err
	}
}
