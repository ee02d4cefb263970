package ratelimit

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-go/sluice/core"
)

// This file is the counter-row protocol: how a database storage claims
// units of a fixed or Better Auth window in a key's rateLimit row with
// guarded writes. A lone request (dbStorage.consume) and a combined batch
// (combiner.decide) both claim through rowClaim.claim, which alone picks
// the write (IncrementValue, IncrementOne, FindOne, Create or the reset),
// keeps the remembered window starts, and counts the attempts.

// rowClaim is what one decision knows of a key's row while it claims.
type rowClaim struct {
	key      string
	max, w   int64 // the rule's Max, and its window in ms
	now      int64
	better   bool // BetterAuthWindow: an admission moves the start to now
	attempts int
	misses   int // passes that lost a race (see claim)

	// known: count and last are a state of the row in a window live at
	// now, read or returned by a write.
	known       bool
	count, last int64
	// started: start is the live window's start as last seen stored (here
	// or remembered in dbStorage.starts); a write guarded on lastRequest
	// equal to it needs the new count alone.
	started bool
	start   int64
}

// newClaim begins a decision on key at now, with the window start this
// process remembers for it (never under BetterAuthWindow, whose start moves).
func (s *dbStorage) newClaim(key string, rule Rule, m Mode, now int64, attempts int) rowClaim {
	r := rowClaim{key: key, max: rule.Max, w: rule.Window.Milliseconds(), now: now,
		better: m == BetterAuthWindow, attempts: attempts}
	if !r.better {
		r.start, r.started = s.start(key, now, r.w)
	}
	return r
}

// claim adds k units (k ≤ max) to the row when they fit: then it reports
// true and r holds the state after the write. It reports false when r
// holds a live state in which k does not fit, the state to deny at. bound
// is the guard: the most the count may be before the write (max − k;
// tests break it).
//
// Each pass tries the guarded increment the state calls for (see
// increment), and when that misses reads the row and does what the row
// calls for: create it, reset an ended window, or learn its state for the
// next pass. A pass that lost a race (a write that matched nothing, a
// unique conflict, a reset another caller made) counts one attempt; a pass
// that only read does not.
func (s *dbStorage) claim(ctx context.Context, r *rowClaim, k, bound int64) (bool, error) {
	for {
		if r.known && r.count > r.max-k {
			return false, nil
		}
		if r.misses >= r.attempts {
			return false, fmt.Errorf("%w: still losing races after %d attempts", core.ErrContention, r.attempts)
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		wrote, ok, err := s.increment(ctx, r, k, bound)
		switch {
		case lostRace(err):
			r.misses++
			continue
		case err != nil:
			return false, err
		case ok:
			return true, nil
		case wrote:
			r.misses++
			r.known = false
			if r.started {
				s.forget(r.key)
				r.started = false
			}
		}
		done, lost, err := s.settle(ctx, r, k)
		if err != nil || done {
			return done, err
		}
		if lost && !wrote {
			r.misses++
		}
	}
}

// increment makes the guarded write of k units that r's state calls for,
// and reports whether it made one:
//   - under BetterAuthWindow, count += k and lastRequest := now guarded on
//     a live window with room, answering the count alone;
//   - with the window's start known, count += k guarded on lastRequest
//     equal to it (a start seen live at now is live) and on room,
//     answering the count alone;
//   - otherwise, unless the value increment is native (MySQL, where the
//     row costs a transaction: read it first), count += k guarded on a
//     live window with room, answering the row.
func (s *dbStorage) increment(ctx context.Context, r *rowClaim, k, bound int64) (wrote, ok bool, err error) {
	sc := requests.Get().(*request)
	inc := core.IncrementRequest{Model: model, Increment: sc.inc}
	sc.inc["count"] = k
	switch {
	case r.better:
		inc.Where = append(sc.where[:0], core.Eq("key", r.key), core.Gt("lastRequest", r.now-r.w), core.Lte("count", bound))
		sc.set["lastRequest"] = r.now
		inc.Set = sc.set
		var n int64
		if n, ok, err = s.db.IncrementValue(ctx, inc); ok {
			r.count, r.last, r.known = n, r.now, true
		}
	case r.started:
		inc.Where = append(sc.where[:0], core.Eq("key", r.key), core.Eq("lastRequest", r.start), core.Lte("count", bound))
		var n int64
		if n, ok, err = s.db.IncrementValue(ctx, inc); ok {
			r.count, r.last, r.known = n, r.start, true
		}
	case !s.db.NativeValueIncrement():
		inc.Where = append(sc.where[:0], core.Eq("key", r.key), core.Gt("lastRequest", r.now-r.w), core.Lte("count", bound))
		var row core.Row
		if row, ok, err = s.db.IncrementOne(ctx, inc); ok {
			r.learn(row.Int("count"), row.Int("lastRequest"))
			s.remember(r.key, r.last, r.w, r.now)
		}
	default:
		sc.release()
		return false, false, nil
	}
	sc.release()
	return true, ok, err
}

// settle reads the row after an increment that missed (or was not tried)
// and does what the row calls for: creates a missing row with k, resets
// an ended window to k (guarded on the start read, so that one concurrent
// caller resets), or learns a live window's state. done means k was
// claimed; lost, that a concurrent caller won the create or the reset.
func (s *dbStorage) settle(ctx context.Context, r *rowClaim, k int64) (done, lost bool, err error) {
	row, found, err := s.db.FindOne(ctx, model, core.Eq("key", r.key))
	if err != nil {
		return false, false, err
	}
	if !found {
		if _, err := s.db.Create(ctx, model, map[string]any{"key": r.key, "count": k, "lastRequest": r.now}); err != nil {
			if errors.Is(err, core.ErrConflict) {
				return false, true, nil
			}
			return false, false, err
		}
		return s.opened(r, k), false, nil
	}
	count, last := row.Int("count"), row.Int("lastRequest")
	if r.now-last < r.w {
		r.learn(count, last)
		if !r.better {
			s.remember(r.key, last, r.w, r.now)
		}
		return false, false, nil
	}
	_, ok, err := s.db.IncrementOne(ctx, core.IncrementRequest{
		Model: model,
		Where: []core.Where{core.Eq("key", r.key), core.Lte("lastRequest", last)},
		Set:   map[string]any{"count": k, "lastRequest": r.now},
	})
	switch {
	case lostRace(err):
		return false, true, nil
	case err != nil:
		return false, false, err
	case ok:
		return s.opened(r, k), false, nil
	}
	return false, true, nil
}

// learn takes a live state of the row, whose lastRequest is the window's
// start (under BetterAuthWindow, its latest admission).
func (r *rowClaim) learn(count, last int64) {
	r.count, r.last, r.known = count, last, true
	r.start, r.started = last, !r.better
}

// opened records a window k opened at now, and reports true.
func (s *dbStorage) opened(r *rowClaim, k int64) bool {
	r.learn(k, r.now)
	if !r.better {
		s.remember(r.key, r.now, r.w, r.now)
	}
	return true
}
