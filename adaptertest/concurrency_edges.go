package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/concurrency"
)

// ccEdgeLeases and ccEdgeNs are the edges of what Acquire accepts, and the
// first values past them.
var (
	ccEdgeLeases = []time.Duration{-1, 0, 1, time.Millisecond - 1, time.Millisecond, time.Millisecond + 1, time.Minute, time.Hour,
		time.Duration(edgeMaxSpan) * time.Millisecond, time.Duration(edgeMaxSpan)*time.Millisecond + 1, math.MaxInt64}
	ccEdgeNs = []int{-1, 0, 1, 2, concurrency.MaxSlots, concurrency.MaxSlots + 1}
)

// ccEdges acquires, renews and releases leases of every edge length with
// every edge n, on a clock moved by hand, and compares LeaseTime, Expires
// and RetryAfter with exact arithmetic: a lease is its length rounded up
// to the millisecond, and one that then does not fit a time.Duration is
// core.ErrInvalid, as is an n outside 1 to MaxSlots. A short lease with
// n > 1 shares its key with a long one taken first, so that a store
// expiring a key when its last lease ends (Redis, in real time) keeps it
// meanwhile; with n = 1 it is only acquired.
func ccEdges(ctx context.Context, f *ccFixture) error {
	clock := NewClock(time.Now().Truncate(time.Millisecond))
	l, err := concurrency.New(f.stores[0], concurrency.WithClock(clock.Now))
	if err != nil {
		return err
	}
	for _, n := range ccEdgeNs {
		for _, lease := range ccEdgeLeases {
			if err := ccEdge(ctx, l, clock, n, lease); err != nil {
				return fmt.Errorf("n %d, lease %v (%d ns): %w", n, lease, int64(lease), err)
			}
		}
	}
	return nil
}

func ccEdge(ctx context.Context, l *concurrency.Limiter, clock *Clock, n int, lease time.Duration) error {
	ms := ceilDiv(bi(int64(lease)), bi(int64(time.Millisecond)))
	invalid := n < 1 || n > concurrency.MaxSlots || lease <= 0 || ms.Cmp(bi(edgeMaxSpan)) > 0
	key := ccKey("edge")
	if n >= 2 && !invalid {
		if _, ok, err := l.Acquire(ctx, key, n, time.Hour); err != nil || !ok {
			return fmt.Errorf("the long lease first: acquired %v, %v", ok, err)
		}
	}
	now := bi(clock.Now().UnixMilli())
	s, ok, err := l.Acquire(ctx, key, n, lease)
	if invalid {
		if !errors.Is(err, core.ErrInvalid) || ok {
			return fmt.Errorf("Acquire: %v, %v; want a refusal wrapping core.ErrInvalid", ok, err)
		}
		return nil
	}
	if err != nil || !ok {
		return fmt.Errorf("Acquire: %v, %v; want a slot", ok, err)
	}
	wantLease := new(big.Int).Mul(ms, bi(int64(time.Millisecond)))
	if !wantLease.IsInt64() || int64(s.LeaseTime) != wantLease.Int64() || s.Expires.UnixMilli() != add(now, ms).Int64() || s.RetryAfter != 0 {
		return fmt.Errorf("acquired with LeaseTime %v, Expires %d, RetryAfter %v; want %v ns, %v, 0", s.LeaseTime, s.Expires.UnixMilli(), s.RetryAfter, wantLease, add(now, ms))
	}
	if n == 1 && lease < time.Minute {
		return nil // no long lease keeps the key: a store may expire it in real time before the next call
	}
	if n <= 2 {
		// Every slot is held now: the next waits for the earliest end.
		earliest := add(now, ms)
		if n == 2 {
			earliest = bigMin(earliest, add(now, bi(time.Hour.Milliseconds())))
		}
		d, ok, err := l.Acquire(ctx, key, n, lease)
		if err != nil || ok || d.Expires.UnixMilli() != earliest.Int64() || int64(d.RetryAfter) != mul(sub(earliest, now), bi(int64(time.Millisecond))).Int64() {
			return fmt.Errorf("a full key: %+v, %v, %v; want a denial until %v", d, ok, err, earliest)
		}
	}
	if renewed, err := s.Renew(ctx); err != nil || !renewed || s.Expires.UnixMilli() != add(now, ms).Int64() {
		return fmt.Errorf("Renew: %v, %v, expires %d; want renewed to %v", renewed, err, s.Expires.UnixMilli(), add(now, ms))
	}
	if released, err := s.Release(ctx); err != nil || !released {
		return fmt.Errorf("Release: %v, %v; want released", released, err)
	}
	return nil
}
