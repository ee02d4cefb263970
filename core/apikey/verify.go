package apikey

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
)

// VerifyOption configures one [Manager.Verify].
type VerifyOption func(*verifyOptions)

type verifyOptions struct{ cost int64 }

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
// CodeExpired; quota exhausted with no refill → CodeUsageExceeded; then
// consuming may answer CodeRateLimited or CodeUsageExceeded. See
// [ApplyClaim] for the exact rules.
//
// In database mode the consumption is one guarded IncrementOne; a write that
// loses a race re-reads and decides again, up to [WithMaxAttempts] times,
// then fails with an error wrapping [core.ErrContention]. A key deleted or
// disabled meanwhile answers accordingly. Errors are for failures only:
// the context, the database, bad options, an uninitialised Manager.
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
	if err := m.ready(ctx, "Verify"); err != nil {
		return Result{}, err
	}
	if key == "" {
		return denied(CodeInvalid, 0, nil), nil
	}
	hash := Hash(key)
	if m.store != nil {
		return m.store.verify(ctx, hash, m.now().UnixMilli(), o.cost, m.o.dropExpired)
	}
	return m.verifyDB(ctx, hash, o.cost)
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

func (m *Manager) verifyDB(ctx context.Context, hash string, cost int64) (Result, error) {
	useCache := m.cache != nil
	for attempt := 0; attempt < m.o.maxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		now := m.now()
		var gen generation // read before the database, so that what is read after can be cached under it
		var s *StoredKey
		if m.cache != nil {
			gen = m.generation(ctx, hash)
			if useCache {
				s = m.cached(ctx, hash, gen)
			}
		}
		fromCache := s != nil
		if s == nil {
			var err error
			if s, err = m.dbFind(ctx, core.Eq("key", hash)); err != nil {
				return Result{}, err
			}
			if s == nil {
				m.uncache(ctx, hash)
				return denied(CodeInvalid, 0, nil), nil
			}
			m.fill(ctx, s, gen)
		}
		p := decide(s, now.UnixMilli(), cost)
		if p.code != "" && fromCache {
			useCache = false // confirm the denial from the source of truth
			attempt--
			continue
		}
		if p.code != "" || cost == 0 {
			k, err := s.toKey()
			if err != nil {
				return Result{}, err
			}
			if p.code == CodeExpired && m.o.dropExpired {
				// Guarded on the expiry, so a key renewed meanwhile survives.
				if _, err := m.db.Delete(ctx, core.ModelAPIKey, core.Eq("id", s.ID), core.Lte("expiresAt", now)); err != nil {
					return Result{}, err
				}
				m.uncache(ctx, hash)
			}
			if p.code != "" {
				return denied(p.code, p.tryAgainIn, k), nil
			}
			return allowed(k), nil
		}
		row, ok, err := m.db.IncrementOne(ctx, consumeRequest(s, p, now, cost))
		switch {
		case errors.Is(err, core.ErrContention):
			// The transaction fallback gave up, having rolled back: as good as a miss.
		case err != nil:
			return Result{}, afterWrite(ctx, "verify", err)
		case ok:
			after := fromRow(row)
			m.fill(ctx, after, gen)
			k, err := after.toKey()
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

// consumeRequest builds the one guarded write that performs the plan on the
// key read as s. Each step's guard holds only while the state that justified
// the decision still does, so a concurrent change makes the whole write
// miss rather than admit too much; times are compared by ranges or IS NULL,
// never by equality.
func consumeRequest(s *StoredKey, p plan, now time.Time, cost int64) core.IncrementRequest {
	req := core.IncrementRequest{
		Model:     core.ModelAPIKey,
		Where:     []core.Where{core.Eq("id", s.ID), core.Eq("enabled", true)},
		Increment: map[string]int64{},
		Set:       map[string]any{"updatedAt": now},
	}
	if s.ExpiresAt == nil {
		req.Where = append(req.Where, core.IsNull("expiresAt"))
	} else {
		req.Where = append(req.Where, core.Gt("expiresAt", now))
	}
	switch {
	case p.rlReset:
		// Only one of several concurrent callers can open the new window:
		// the first sets lastRequest = now, which no longer satisfies the guard.
		w := time.Duration(*s.RateLimitTimeWindow) * time.Millisecond
		if s.LastRequest == nil {
			req.Where = append(req.Where, core.IsNull("lastRequest"))
		} else {
			req.Where = append(req.Where, core.Lte("lastRequest", now.Add(-w)))
		}
		req.Set["requestCount"], req.Set["lastRequest"] = cost, now
	case p.rlIncrement:
		w := time.Duration(*s.RateLimitTimeWindow) * time.Millisecond
		req.Where = append(req.Where, core.Gt("lastRequest", now.Add(-w)), core.Lte("requestCount", *s.RateLimitMax-cost))
		req.Increment["requestCount"] = cost
	}
	switch {
	case p.refill:
		// Only one caller wins a refill: it moves lastRefillAt to now,
		// after which the refill is no longer due.
		iv := time.Duration(*s.RefillInterval) * time.Millisecond
		if s.LastRefillAt == nil {
			req.Where = append(req.Where, core.IsNull("lastRefillAt"), core.Lte("createdAt", now.Add(-iv)))
		} else {
			req.Where = append(req.Where, core.Lte("lastRefillAt", now.Add(-iv)))
		}
		req.Where = append(req.Where, core.IsNotNull("remaining"), core.Eq("refillAmount", *s.RefillAmount))
		req.Set["remaining"], req.Set["lastRefillAt"] = *s.RefillAmount-cost, now
	case p.decrement:
		req.Where = append(req.Where, core.Gte("remaining", cost))
		req.Increment["remaining"] = -cost
	case s.Remaining == nil:
		req.Where = append(req.Where, core.IsNull("remaining"))
	}
	return req
}
