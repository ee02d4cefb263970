package apikey

import (
	"context"
	"errors"
	"fmt"

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
		return invalid(), nil
	}
	return m.store.verify(ctx, Hash(key), o.cost, req, o.limits)
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
