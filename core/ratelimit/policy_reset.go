package ratelimit

import "context"

// ResetPolicy clears the counters of every rule of p on key, as
// [Limiter.ResetRule] does for a lone rule: the key's next request under p
// opens a new window (or period) for each rule. A policy's rules count
// under names of their own (see [PolicySeparator]), which [Limiter.Reset]
// of key alone does not find. It is not an error when the key has no
// counters. Bad input (p failing [Policy.Validate], a bad key) is an error
// wrapping core.ErrInvalid before anything is deleted.
func (l *Limiter) ResetPolicy(ctx context.Context, key string, p Policy) error {
	if err := l.usable(); err != nil {
		return err
	}
	if err := l.validatePolicy(key, p, 0); err != nil {
		return keyError(key, err)
	}
	for _, r := range p {
		if err := l.ResetRule(ctx, policyKey(key, r.Name), r); err != nil {
			return err
		}
	}
	return nil
}
