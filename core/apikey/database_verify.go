package apikey

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// verify decides on the clock's time at each attempt. A verification
// that names limits goes to verifyLimited.
func (d *dbStore) verify(ctx context.Context, hash string, cost int64, req *required, spend []keystore.LimitSpend) (Result, error) {
	if len(spend) > 0 && d.schema.noLimits.Load() == nil {
		return d.verifyLimited(ctx, hash, cost, req, spend)
	}
	if cost > 0 {
		if s, g := d.keys.get(hash); s != nil {
			if r, done, err := d.consumeRemembered(ctx, s, g, cost, req); done || err != nil {
				return r, err
			}
		}
	}
	useCache := d.cache != nil
	for attempt := 0; attempt < d.maxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		now := d.now()
		gen := d.cache.generation(ctx, hash) // read before the database, so that what is read after can be cached under it
		var s *keystore.Key
		if useCache {
			s = d.cache.get(ctx, hash, gen)
			if s != nil && anchorMarked(s) && s.RefillAnchor == nil {
				s = nil // cached without its anchor: read it
			}
		}
		fromCache := s != nil
		rerolled := false // s was found through an old hash, whose generation gen is not
		if s == nil {
			var err error
			if s, rerolled, err = d.read(ctx, hash, now); err != nil {
				return Result{}, err
			}
			if s == nil {
				d.keys.drop(hash)
				d.cache.drop(ctx, hash)
				return invalid(), nil
			}
			d.keys.put(s)
			if !rerolled {
				d.cache.fill(ctx, s, gen)
			}
		}
		p := decideRead(s, now, cost, req)
		if p.Code != "" && fromCache {
			useCache = false // confirm the denial from the source of truth
			attempt--
			continue
		}
		if p.Code != "" || cost == 0 {
			return d.answerRead(ctx, s, hash, p, now)
		}
		after, err := d.consume(ctx, s, nil, p, now, cost, req)
		switch {
		case errors.Is(err, core.ErrContention):
			// The transaction fallback gave up, having rolled back: as good as a miss.
		case err != nil:
			return Result{}, afterWrite(ctx, "verify", err)
		case after != nil:
			d.keys.put(after)
			if !rerolled {
				d.cache.fill(ctx, after, gen)
			}
			k, err := toKey(after)
			if err != nil {
				return Result{}, err
			}
			return allowed(k), nil
		}
		useCache = false // the cached copy was stale: read the database
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return Result{}, fmt.Errorf("apikey: verify: %w: the guarded write lost the race %d times", core.ErrContention, d.maxAttempts)
}

// decideRead decides a verification of s at now, the key as read (or
// remembered), on its own fields: the rules of keystore.Apply but the
// named limits, which verifyLimited decides with their rows.
func decideRead(s *keystore.Key, now time.Time, cost int64, req *required) keystore.Plan {
	return keystore.Decide(s, nil, req.claim(now.UnixMilli(), cost, nil))
}

// answerRead answers a verification decided on the key as read, s, that
// writes nothing: a denial, or a check of cost 0.
func (d *dbStore) answerRead(ctx context.Context, s *keystore.Key, hash string, p keystore.Plan, now time.Time) (Result, error) {
	k, err := toKey(s)
	if err != nil {
		return Result{}, err
	}
	if p.Code == keystore.Expired && d.dropExpired {
		if err := d.dropExpiredKey(ctx, s, hash, now); err != nil {
			return Result{}, err
		}
	}
	if p.Code == "" {
		return allowed(k), nil
	}
	return denied(p.Code, p.TryAgainIn, p.Limit, p.OwnerLimit, k), nil
}

// dropExpiredKey deletes an expired key that a verification read through
// hash (WithDeleteExpiredOnVerify), guarded on the expiry, so that a key
// renewed meanwhile survives.
func (d *dbStore) dropExpiredKey(ctx context.Context, s *keystore.Key, hash string, now time.Time) error {
	deleted, err := d.db.Delete(ctx, core.ModelAPIKey, core.Eq("id", s.ID), core.Lte("expiresAt", now))
	if err != nil {
		return err
	}
	d.keys.drop(hash)
	d.keys.drop(s.Key)
	d.cache.drop(ctx, hash)
	if deleted {
		return d.forgetLimits(ctx, s.ID)
	}
	return nil
}

// consumeRemembered tries a verification in one round trip: the guarded
// write planned from s, the key as this manager last saw it. Because the
// guard holds only on a row for which the rules decide exactly that plan
// (see consumeRequest), a hit is the answer the rules give on the row as it
// was. done == false means nothing was written and the caller must read the
// key: the write matched nothing, or s calls for a denial, which only a
// read may confirm.
func (d *dbStore) consumeRemembered(ctx context.Context, s *keystore.Key, g *guardValues, cost int64, req *required) (r Result, done bool, err error) {
	if anchorMarked(s) && s.RefillAnchor == nil {
		return Result{}, false, nil // its anchor unknown: only a read decides
	}
	now := d.now()
	p := decideRead(s, now, cost, req)
	if p.Code != "" {
		return Result{}, false, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, true, err // before the write: nothing spent
	}
	after, err := d.consume(ctx, s, g, p, now, cost, req)
	switch {
	case errors.Is(err, core.ErrContention), err == nil && after == nil:
		return Result{}, false, nil
	case err != nil:
		return Result{}, true, afterWrite(ctx, "verify", err)
	}
	d.keys.put(after)
	k, err := toKey(after)
	if err != nil {
		return Result{}, true, err
	}
	return allowed(k), true, nil
}

// consume sends the guarded write of consumeRequest and returns the key
// after it, or nil when the guard matched nothing; g, when not nil, holds
// s's guard values already boxed. The write returns only the columns of
// writeReturns: the guard holds the others equal to s's.
func (d *dbStore) consume(ctx context.Context, s *keystore.Key, g *guardValues, p keystore.Plan, now time.Time, cost int64, req *required) (*keystore.Key, error) {
	b := requests.Get().(*requestBuf)
	defer b.release()
	if g == nil {
		g = newGuardValues(s)
	}
	w := consumeRequest(s, g, p, req, now, cost, b)
	missed := false
	if d.counts(s, p) && g.tryCount() {
		after, err := d.consumeCount(ctx, s, w, req, now)
		switch {
		case err == nil && after == nil:
			// A pinned column moved, or a guard broke: the write
			// returning the row decides, and tells which.
			missed = true
		case !errors.Is(err, core.ErrInvalid):
			return after, err
		}
		// ErrInvalid: a pinned text core refuses in a where clause
		// (stored by another program); nothing was written.
	}
	w.Returning = writeReturns
	row, ok, err := d.db.IncrementOne(ctx, w)
	if err != nil || !ok {
		return nil, err
	}
	if missed {
		g.skip.Store(countBackoff)
	}
	after := fromWrite(s, row)
	if anchorMarked(after) {
		after.RefillAnchor = s.RefillAnchor // as withAnchor: the write matched, so s's anchor holds
	}
	return after, nil
}

// requestBuf holds the where list and maps of a consume request, reused
// from one verification to the next: core.DB.IncrementOne converts them
// into its own and keeps none of them once it returns.
type requestBuf struct {
	where []core.Where
	inc   map[string]int64
	set   map[string]any
}

var requests = sync.Pool{New: func() any {
	// 32 where clauses: more than the 18 that consumeRequest adds at most
	// (an anchored refill's snapshot among them), and than a count's with
	// consumeCount's pins added.
	return &requestBuf{where: make([]core.Where, 0, 32), inc: make(map[string]int64, 2), set: make(map[string]any, 5)}
}}

// release empties b, so that it holds on to no value, and pools it.
func (b *requestBuf) release() {
	clear(b.where)
	b.where = b.where[:0]
	clear(b.inc)
	clear(b.set)
	requests.Put(b)
}

// consumeRequest builds the one guarded write that performs the plan p,
// decided at now on the key as read (or remembered) as s. The write finds
// the key by its hash and its id (so a row deleted and made again under
// the same hash is not taken for s's), and its guard holds exactly on the rows on which
// keystore.Decide, at now, gives p again: the key enabled and unexpired, its
// permissions as read when the verification requires some, its
// rate-limit and refill settings equal to s's, and each step's condition
// (window open or elapsed, room under the rate limit, refill due or not,
// quota left). So a write planned from however old a copy either applies
// the decision the rules give on the row as it stands, or matches nothing;
// and of concurrent callers that planned the same window reset or refill,
// only the first matches, since its write makes the step no longer due.
// Times are compared by ranges or IS NULL, never by equality.
// The request is built in b, which must be empty, with g holding s's
// guard values.
func consumeRequest(s *keystore.Key, g *guardValues, p keystore.Plan, need *required, now time.Time, cost int64, b *requestBuf) core.IncrementRequest {
	req := core.IncrementRequest{
		Model: core.ModelAPIKey,
		Where: append(b.where,
			core.Eq("key", g.key), core.Eq("id", g.id), core.Eq("enabled", true), core.Eq("rateLimitEnabled", s.RateLimitEnabled),
			eqOrNull("rateLimitTimeWindow", g.window), eqOrNull("rateLimitMax", g.max),
			eqOrNull("refillInterval", g.interval), eqOrNull("refillAmount", g.amount)),
		Increment: b.inc,
		Set:       b.set,
	}
	req.Set["updatedAt"] = now
	if s.ExpiresAt == nil {
		req.Where = append(req.Where, core.IsNull("expiresAt"))
	} else {
		req.Where = append(req.Where, core.Gt("expiresAt", now))
	}
	if !need.none() {
		// The permissions decided on must still be the stored ones.
		if s.Permissions == nil {
			req.Where = append(req.Where, core.IsNull("permissions"))
		} else {
			req.Where = append(req.Where, core.Eq("permissions", *s.Permissions))
		}
	}
	switch {
	case p.Reset:
		// Only one of several concurrent callers can open the new window:
		// the first sets lastRequest = now, which no longer satisfies the guard.
		w := time.Duration(*s.RateLimitTimeWindow) * time.Millisecond
		if s.LastRequest == nil {
			req.Where = append(req.Where, core.IsNull("lastRequest"))
		} else {
			req.Where = append(req.Where, core.Lte("lastRequest", now.Add(-w)))
		}
		req.Set["requestCount"], req.Set["lastRequest"] = cost, now
	case p.Increment:
		w := time.Duration(*s.RateLimitTimeWindow) * time.Millisecond
		req.Where = append(req.Where, core.Gt("lastRequest", now.Add(-w)), core.Lte("requestCount", *s.RateLimitMax-cost))
		req.Increment["requestCount"] = cost
	}
	anchored := anchorMarked(s) && s.Remaining != nil
	if anchored {
		// lastRefillAt as read, which binds the anchor decided on too (see
		// database_refill.go); it implies what the interval guards below
		// check for an interval refill.
		req.Where = refillSnapshot(req.Where, s)
	}
	switch {
	case p.Refill:
		// Only one caller wins a refill: it moves lastRefillAt to now,
		// after which the refill is no longer due.
		if !anchored {
			iv := time.Duration(*s.RefillInterval) * time.Millisecond
			if s.LastRefillAt == nil {
				req.Where = append(req.Where, core.IsNull("lastRefillAt"), core.Lte("createdAt", now.Add(-iv)))
			} else {
				req.Where = append(req.Where, core.Lte("lastRefillAt", now.Add(-iv)))
			}
		}
		req.Where = append(req.Where, core.IsNotNull("remaining"))
		req.Set["remaining"], req.Set["lastRefillAt"] = *s.RefillAmount-cost, now
	case p.Decrement:
		req.Where = append(req.Where, core.Gte("remaining", cost))
		req.Increment["remaining"] = -cost
		if s.Refillable() && !anchored {
			// Not due: a refill that fell due since s was seen must win
			// over the decrement, as the rules put it first.
			iv := time.Duration(*s.RefillInterval) * time.Millisecond
			if s.LastRefillAt == nil {
				req.Where = append(req.Where, core.IsNull("lastRefillAt"), core.Gt("createdAt", now.Add(-iv)))
			} else {
				req.Where = append(req.Where, core.Gt("lastRefillAt", now.Add(-iv)))
			}
		}
	case s.Remaining == nil:
		req.Where = append(req.Where, core.IsNull("remaining"))
	}
	return req
}

// eqOrNull compares an optional integer column with a boxed value (nil for
// NULL), NULL by IS NULL.
func eqOrNull(field string, v any) core.Where {
	if v == nil {
		return core.IsNull(field)
	}
	return core.Eq(field, v)
}
