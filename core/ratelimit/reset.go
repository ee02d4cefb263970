package ratelimit

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core"
)

// Reset clears key's counter, as an operator does for a client: its next
// request opens a new window, whatever the rule. It is not an error when
// the key has no counter.
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
// error wrapping core.ErrInvalid); use [Limiter.ResetRule].
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if err := l.usable(); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if err := l.slidingReset(); err != nil {
		return err
	}
	if l.denials != nil {
		l.denials.remove(key)
	}
	if err := l.store.reset(ctx, key); err != nil {
		return fmt.Errorf("ratelimit: reset key %q: %w", key, err)
	}
	return nil
}

func (s *memStorage) reset(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.m.remove(key)
	return nil
}

func (s *dbStorage) reset(ctx context.Context, key string) error {
	if err := s.fits(key); err != nil {
		return err
	}
	_, err := s.db.DeleteMany(ctx, model, core.Eq("key", key))
	return err
}

func (s *secondaryStorage) reset(ctx context.Context, key string) error {
	return s.s.Delete(ctx, SecondaryPrefix+key)
}

// remove deletes key.
func (b *boundedMap[V]) remove(key string) {
	s := b.lock(key)
	delete(s.m, key)
	s.mu.Unlock()
}
