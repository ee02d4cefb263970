package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Prune deletes the counters whose window is over and returns how many. A
// counter whose window may still be live is never deleted: with database
// storage, a row goes only when its lastRequest is at least the declared
// longest window ago ([WithLongestWindow] is required), and a rule with a
// longer window is refused. Under [SlidingWindow] a window's counter is
// weighed until the next window ends, so a row goes only when its window
// started at least twice the longest window ago. The secondary storage
// expires counters itself, so Prune does nothing there. With [WithLeases],
// Prune first returns the leases unused for the lease time.
func (l *Limiter) Prune(ctx context.Context) (int64, error) {
	if err := l.usable(); err != nil {
		return 0, err
	}
	var leaseErr error
	if l.leases != nil {
		// Leases unused for the lease time go back first (see WithLeases).
		leaseErr = l.leases.sweep(ctx, l.now(), false)
	}
	longest := l.longest.Milliseconds()
	if l.mode == SlidingWindow {
		longest *= 2 // a window's counter is weighed until the next window ends
	}
	n, err := l.store.prune(ctx, l.now(), longest)
	if err = errors.Join(leaseErr, err); err != nil {
		return n, fmt.Errorf("ratelimit: Prune: %w", err)
	}
	if l.denials != nil {
		l.denials.sweep(l.now())
	}
	return n, nil
}

// StartPruning runs Prune every interval in a goroutine until ctx is done or
// [Limiter.Close] is called. onError, which may be nil, receives Prune's
// errors; pruning goes on after one.
func (l *Limiter) StartPruning(ctx context.Context, every time.Duration, onError func(error)) error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.parent != nil {
		return errTxPruning
	}
	if every <= 0 {
		return invalidf("StartPruning: interval %v must be positive", every)
	}
	if _, ok := l.store.(*dbStorage); ok && l.longest <= 0 {
		return invalidf("StartPruning: database storage needs the longest window: use WithLongestWindow")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return invalidf("StartPruning: the limiter is closed")
	}
	stop := make(chan struct{})
	l.pruners = append(l.pruners, stop)
	tick, release := l.newTicker(every)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer release()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case <-tick:
				if _, err := l.Prune(ctx); err != nil && onError != nil && ctx.Err() == nil {
					onError(err)
				}
			}
		}
	}()
	return nil
}

// Close stops every pruning goroutine and waits for them to end. With
// [WithLeases] it then returns what the leases hold to the counters and
// makes no more leases. The limiter still decides requests afterwards.
func (l *Limiter) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		for _, stop := range l.pruners {
			close(stop)
		}
		l.pruners = nil
	}
	l.mu.Unlock()
	l.wg.Wait()
	if l.leases != nil {
		// What the leases hold goes back, within closeLeaseTime: Close
		// has no context of its own.
		ctx, cancel := context.WithTimeout(context.Background(), closeLeaseTime)
		defer cancel()
		if err := l.leases.sweep(ctx, l.now(), true); err != nil {
			return fmt.Errorf("ratelimit: Close: %w", err)
		}
	}
	return nil
}

// closeLeaseTime bounds how long Close spends returning leases.
const closeLeaseTime = 10 * time.Second

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
