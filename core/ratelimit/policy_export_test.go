package ratelimit

import "context"

// OneByOne is a broken policy storage for the tests that prove the policy
// race tests can fail: it charges a policy's rules one after another, each
// a lone request, as chained Consume calls do, until one denies, and
// refunds nothing.
func OneByOne(s Storage) Storage { return oneByOne{s} }

type oneByOne struct{ Storage }

func (o oneByOne) consumeAll(ctx context.Context, items []*item, cost, now int64, m Mode, attempts int) error {
	for _, it := range items {
		st, err := o.consume(ctx, it.key, it.rule, cost, now, m, attempts)
		if err != nil {
			return err
		}
		it.st = st
		if !st.allowed {
			return nil
		}
	}
	return nil
}
