package ratelimit

import (
	"context"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Reset clears key's counter, as an operator does for a client: its next
// request opens a new window, whatever the rule. It is not an error when
// the key has no counter.
//
// A policy's rules count under names of their own, which Reset of key
// leaves: use [Limiter.ResetPolicy].
//
// The counter is gone for every process sharing the storage, but a
// limiter in another process that had cached this key's denial (see
// [WithDenialCache]) keeps denying it until the window it saw ends; where
// a reset must take effect everywhere at once, run those limiters with
// WithDenialCache(0). A decision in flight when Reset runs may be counted
// in the old window or the new one, never in both.
//
// Under [SlidingWindow], Database and Secondary storages keep a counter per
// window, which only the rule's window finds: Reset refuses there (an
// error wrapping core.ErrInvalid); use [Limiter.ResetRule]. So does a
// calendar rule in Secondary storage, whose counters are one per period:
// Reset cannot tell them from the key alone and leaves them; use
// ResetRule there too.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if err := l.usable(); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return keyError(key, err)
	}
	if err := l.slidingReset(); err != nil {
		return err
	}
	if l.denials != nil {
		l.denials.remove(key)
	}
	if l.leases != nil {
		l.leases.forget(key)
	}
	if err := l.store.reset(ctx, key); err != nil {
		return driver.WrapKey("ratelimit: reset", key, err)
	}
	return nil
}

// ResetRule clears key's counters under rule, as [Limiter.Reset] does. Under
// [SlidingWindow], database and secondary storages keep one counter per
// key and window, named after the window (see [SlidingSeparator]), so
// clearing them takes the rule's window: ResetRule deletes the counters of
// the previous, current and next windows. A calendar rule's counters in
// [Secondary] storage are one per period, named after its start: ResetRule
// deletes the previous, current and next periods'. Otherwise, and with
// [Memory] storage, it is Reset.
func (l *Limiter) ResetRule(ctx context.Context, key string, rule Rule) error {
	if err := l.usable(); err != nil {
		return err
	}
	if s, ok := l.store.(*dbStorage); ok && s.tx {
		return errTxReset // before the sliding path, which deletes by itself
	}
	if s, ok := l.store.(*secondaryStorage); ok && rule.Calendar != 0 {
		return l.resetPeriods(ctx, s, key, rule)
	}
	if l.mode != SlidingWindow {
		return l.Reset(ctx, key)
	}
	if err := l.validate(key, rule, 0); err != nil {
		return keyError(key, err)
	}
	if l.denials != nil {
		l.denials.remove(key)
	}
	w := rule.Window.Milliseconds()
	i, _ := windowOf(l.now(), w)
	var err error
	switch s := l.store.(type) {
	case *dbStorage:
		var names []any
		for j := i - 1; j <= i+1; j++ {
			cur, _, e := s.slidingKeys(key, j)
			if e != nil {
				return driver.WrapKey("ratelimit: reset", key, e)
			}
			names = append(names, cur)
		}
		_, err = s.db.DeleteMany(ctx, model, core.In("key", names...))
	case *secondaryStorage:
		for j := i - 1; j <= i+1 && err == nil; j++ {
			err = s.s.Delete(ctx, slidingName(key, j))
		}
	default:
		err = l.store.reset(ctx, key)
	}
	if err != nil {
		return driver.WrapKey("ratelimit: reset", key, err)
	}
	return nil
}

// slidingReset refuses Reset under SlidingWindow on storages that need the
// rule to find a key's counters.
func (l *Limiter) slidingReset() error {
	if _, mem := l.store.(*memStorage); l.mode == SlidingWindow && !mem {
		return invalidf("Reset: under SlidingWindow %T keeps a counter per window: use ResetRule with the key's rule", l.store)
	}
	return nil
}

// resetPeriods deletes a calendar rule's counters in secondary storage:
// the previous, current and next periods'.
func (l *Limiter) resetPeriods(ctx context.Context, s *secondaryStorage, key string, rule Rule) error {
	if err := l.validate(key, rule, 0); err != nil {
		return keyError(key, err)
	}
	if l.denials != nil {
		l.denials.remove(key)
	}
	f := rule.frame(l.now())
	prev := rule.frame(f.open - 1)
	for _, start := range []int64{prev.open, f.open, f.end()} {
		if err := s.s.Delete(ctx, slidingName(key, start)); err != nil {
			return driver.WrapKey("ratelimit: reset", key, err)
		}
	}
	return nil
}
