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

// VerifyOption configures one [Manager.Verify].
type VerifyOption func(*verifyOptions)

type verifyOptions struct {
	cost   int64
	req    required
	limits []keystore.LimitSpend // in name order
	err    error                 // the first bad option
}

// Cost sets how many units of quota and rate limit the verification spends
// (default 1). Cost 0 checks without writing: the key must be valid and at
// least one unit must be left in both its quota and its rate limit.
func Cost(n int64) VerifyOption { return func(o *verifyOptions) { o.cost = n } }

// ErrOutcomeUnknown marks a verification that failed after its write to
// the database (or, in storage-only mode, its claim in the storage) had
// started, because its context ended meanwhile: the write may have
// committed, spending quota and a rate-limit slot, although the caller sees
// an error. Match it with errors.Is; the error also wraps the context's.
// An error without it came before any write, so nothing was spent.
var ErrOutcomeUnknown = errors.New("outcome unknown: the context ended while the write was in flight; it may have been applied")

// Verify checks a plaintext key and consumes one unit (or [Cost]) of its
// quota and rate limit. Denials are a [Result] with Valid == false, in this
// order: unknown key → CodeInvalid; disabled → CodeDisabled; expired →
// CodeExpired; a permission the options require missing → CodeForbidden;
// quota exhausted with no refill → CodeUsageExceeded; then
// consuming may answer CodeRateLimited or CodeUsageExceeded. See
// [keystore.Apply] for the exact rules.
//
// In database mode the consumption is one guarded IncrementOne. For a key
// the manager remembers (see [WithKeyStateCache]) that write is the whole
// verification, one round trip: it finds the key by its hash, its guard
// re-checks in the database everything the decision rests on, and it
// returns the row. Otherwise, and whenever that write matches nothing or
// the remembered key calls for a denial, Verify reads the key, decides,
// and writes; a write that loses a race re-reads and decides again, up to
// [WithMaxAttempts] times, then fails with an error wrapping
// [core.ErrContention]. Denials and Cost(0) checks are always decided on a
// read. A key deleted, disabled or changed meanwhile, through this manager
// or any other, answers as it now is. Errors are for failures only: the
// context, the database, bad options, an uninitialised Manager.
//
// Deadlines: a context that ends while the consuming write is in flight
// cannot take the write back. The database may commit it (the quota is
// spent) while Verify returns an error wrapping both the context's error
// and [ErrOutcomeUnknown]; under a deadline too tight for the database's
// load this happens to a few requests in a hundred. Give Verify a deadline
// with room for a read and a write under load, and do not answer an
// ErrOutcomeUnknown as if nothing had been spent: a client that retries it
// may pay twice. An error without ErrOutcomeUnknown happened before any
// write.
func (m *Manager) Verify(ctx context.Context, key string, opts ...VerifyOption) (Result, error) {
	if m != nil && m.o.observe != nil {
		return m.observed(ctx, key, opts)
	}
	return m.verify(ctx, key, opts)
}

func (m *Manager) verify(ctx context.Context, key string, opts []VerifyOption) (Result, error) {
	if err := m.initialised("Verify"); err != nil {
		return Result{}, err
	}
	o := verifyOptions{cost: 1}
	for i, opt := range opts {
		if opt == nil {
			return Result{}, invalidf("Verify: option %d of %d is nil", i+1, len(opts))
		}
		opt(&o)
	}
	if o.cost < 0 {
		return Result{}, invalidf("Verify: cost %d is negative", o.cost)
	}
	if o.err != nil {
		return Result{}, fmt.Errorf("Verify: %w", o.err)
	}
	var req *required
	if !o.req.none() {
		req = &o.req
	}
	if err := m.ready(ctx, "Verify"); err != nil {
		return Result{}, err
	}
	if key == "" {
		return denied(CodeInvalid, 0, nil), nil
	}
	return m.store.verify(ctx, Hash(key), m.now(), o.cost, req, o.limits)
}

// afterWrite classifies an error that came back from a write that had
// started: when the context ended meanwhile, the write may have committed.
// A request refused as invalid never reached the database.
func afterWrite(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil && !errors.Is(err, core.ErrInvalid) {
		return fmt.Errorf("apikey: %s: %w: %w", op, ErrOutcomeUnknown, err)
	}
	return err
}

func (m *Manager) verifyDB(ctx context.Context, hash string, cost int64, req *required) (Result, error) {
	if cost > 0 {
		if s, g := m.keys.get(hash); s != nil {
			if r, done, err := m.consumeRemembered(ctx, s, g, cost, req); done || err != nil {
				return r, err
			}
		}
	}
	useCache := m.cache != nil
	for attempt := 0; attempt < m.o.maxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		now := m.now()
		var gen generation // read before the database, so that what is read after can be cached under it
		var s *keystore.Key
		if m.cache != nil {
			gen = m.generation(ctx, hash)
			if useCache {
				s = m.cached(ctx, hash, gen)
			}
		}
		fromCache := s != nil
		rerolled := false // s was found through an old hash, whose generation gen is not
		if s == nil {
			var err error
			if s, rerolled, err = m.dbRead(ctx, hash, now); err != nil {
				return Result{}, err
			}
			if s == nil {
				m.keys.drop(hash)
				m.uncache(ctx, hash)
				return denied(CodeInvalid, 0, nil), nil
			}
			m.keys.put(s)
			if !rerolled {
				m.fill(ctx, s, gen)
			}
		}
		p := decideRead(s, now, cost, req)
		if p.Code != "" && fromCache {
			useCache = false // confirm the denial from the source of truth
			attempt--
			continue
		}
		if p.Code != "" || cost == 0 {
			return m.answerRead(ctx, s, hash, p, now)
		}
		row, ok, err := m.consume(ctx, s, nil, p, now, cost, req)
		switch {
		case errors.Is(err, core.ErrContention):
			// The transaction fallback gave up, having rolled back: as good as a miss.
		case err != nil:
			return Result{}, afterWrite(ctx, "verify", err)
		case ok:
			after := fromRow(row)
			m.keys.put(after)
			if !rerolled {
				m.fill(ctx, after, gen)
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
	return Result{}, fmt.Errorf("apikey: verify: %w: the guarded write lost the race %d times", core.ErrContention, m.o.maxAttempts)
}

// decideRead decides a verification of s at now, the key as read (or
// remembered), on its own fields: the rules of keystore.Apply but the
// named limits, which verifyLimited decides with their rows.
func decideRead(s *keystore.Key, now time.Time, cost int64, req *required) keystore.Plan {
	return keystore.Decide(s, nil, req.claim(now.UnixMilli(), cost, nil))
}

// answerRead answers a verification decided on the key as read, s, that
// writes nothing: a denial, or a check of cost 0.
func (m *Manager) answerRead(ctx context.Context, s *keystore.Key, hash string, p keystore.Plan, now time.Time) (Result, error) {
	k, err := toKey(s)
	if err != nil {
		return Result{}, err
	}
	if p.Code == keystore.Expired && m.o.dropExpired {
		if err := m.dropExpiredKey(ctx, s, hash, now); err != nil {
			return Result{}, err
		}
	}
	if p.Code == "" {
		return allowed(k), nil
	}
	r := denied(p.Code, p.TryAgainIn, k)
	r.Limit, r.OwnerLimit = p.Limit, p.OwnerLimit
	return r, nil
}

// dropExpiredKey deletes an expired key that a verification read through
// hash (WithDeleteExpiredOnVerify), guarded on the expiry, so that a key
// renewed meanwhile survives.
func (m *Manager) dropExpiredKey(ctx context.Context, s *keystore.Key, hash string, now time.Time) error {
	deleted, err := m.db.Delete(ctx, core.ModelAPIKey, core.Eq("id", s.ID), core.Lte("expiresAt", now))
	if err != nil {
		return err
	}
	m.keys.drop(hash)
	m.keys.drop(s.Key)
	m.uncache(ctx, hash)
	if deleted {
		return m.dbForgetLimits(ctx, s.ID)
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
func (m *Manager) consumeRemembered(ctx context.Context, s *keystore.Key, g *guardValues, cost int64, req *required) (r Result, done bool, err error) {
	now := m.now()
	p := decideRead(s, now, cost, req)
	if p.Code != "" {
		return Result{}, false, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, true, err // before the write: nothing spent
	}
	row, ok, err := m.consume(ctx, s, g, p, now, cost, req)
	switch {
	case errors.Is(err, core.ErrContention), err == nil && !ok:
		return Result{}, false, nil
	case err != nil:
		return Result{}, true, afterWrite(ctx, "verify", err)
	}
	after := fromRow(row)
	m.keys.put(after)
	k, err := toKey(after)
	if err != nil {
		return Result{}, true, err
	}
	return allowed(k), true, nil
}

// consume sends the guarded write of consumeRequest; g, when not nil,
// holds s's guard values already boxed.
func (m *Manager) consume(ctx context.Context, s *keystore.Key, g *guardValues, p keystore.Plan, now time.Time, cost int64, req *required) (core.Row, bool, error) {
	b := requests.Get().(*requestBuf)
	defer b.release()
	if g == nil {
		g = newGuardValues(s)
	}
	return m.db.IncrementOne(ctx, consumeRequest(s, g, p, req, now, cost, b))
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
	// 16 where clauses: more than the 14 that consumeRequest adds at most.
	return &requestBuf{where: make([]core.Where, 0, 16), inc: make(map[string]int64, 2), set: make(map[string]any, 5)}
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
// the key by its hash, and its guard holds exactly on the rows on which
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
			core.Eq("key", g.key), core.Eq("enabled", true), core.Eq("rateLimitEnabled", s.RateLimitEnabled),
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
	switch {
	case p.Refill:
		// Only one caller wins a refill: it moves lastRefillAt to now,
		// after which the refill is no longer due.
		iv := time.Duration(*s.RefillInterval) * time.Millisecond
		if s.LastRefillAt == nil {
			req.Where = append(req.Where, core.IsNull("lastRefillAt"), core.Lte("createdAt", now.Add(-iv)))
		} else {
			req.Where = append(req.Where, core.Lte("lastRefillAt", now.Add(-iv)))
		}
		req.Where = append(req.Where, core.IsNotNull("remaining"))
		req.Set["remaining"], req.Set["lastRefillAt"] = *s.RefillAmount-cost, now
	case p.Decrement:
		req.Where = append(req.Where, core.Gte("remaining", cost))
		req.Increment["remaining"] = -cost
		if s.Refillable() {
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
