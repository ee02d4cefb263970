package ratelimit

import (
	"context"
	"fmt"
)

// String names the mode as its constant does.
func (m Mode) String() string {
	switch m {
	case FixedWindow:
		return "FixedWindow"
	case BetterAuthWindow:
		return "BetterAuthWindow"
	case SlidingWindow:
		return "SlidingWindow"
	case GCRA:
		return "GCRA"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// slidingStorage is a storage that serves [SlidingWindow] (sliding.go).
type slidingStorage interface {
	consumeSliding(ctx context.Context, key string, rule Rule, cost, now int64, attempts int) (state, error)
	peekSliding(ctx context.Context, key string, rule Rule, now int64) (state, error)
}

// gcraStorage is a storage that serves [GCRA] (gcra.go).
type gcraStorage interface {
	consumeGCRA(ctx context.Context, key string, rule Rule, cost, now int64, attempts int) (state, error)
	peekGCRA(ctx context.Context, key string, rule Rule, now int64) (state, error)
}

// servesMode refuses a mode the storage has no algorithm for.
func servesMode(s Storage, m Mode) error {
	ok := true
	switch m {
	case SlidingWindow:
		_, ok = s.(slidingStorage)
	case GCRA:
		_, ok = s.(gcraStorage)
	}
	if !ok {
		return invalidf("New: %T does not serve %v", s, m)
	}
	return nil
}

// consume spends cost under the limiter's mode.
func (l *Limiter) consume(ctx context.Context, key string, rule Rule, cost, now int64) (state, error) {
	switch l.mode {
	case SlidingWindow:
		return l.store.(slidingStorage).consumeSliding(ctx, key, rule, cost, now, l.attempts)
	case GCRA:
		return l.store.(gcraStorage).consumeGCRA(ctx, key, rule, cost, now, l.attempts)
	}
	return l.store.consume(ctx, key, rule, cost, now, l.mode, l.attempts)
}

// peek reads key's state under the limiter's mode without writing.
func (l *Limiter) peek(ctx context.Context, key string, rule Rule, now int64) (state, error) {
	switch l.mode {
	case SlidingWindow:
		return l.store.(slidingStorage).peekSliding(ctx, key, rule, now)
	case GCRA:
		return l.store.(gcraStorage).peekGCRA(ctx, key, rule, now)
	}
	return l.store.peek(ctx, key, rule, now)
}
