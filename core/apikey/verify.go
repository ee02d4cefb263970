package apikey

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
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
	o := verifyOptions{cost: 1}
	if err := m.options("Verify", opts, &o); err != nil {
		return Result{}, err
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
	res, err := m.store.verify(ctx, keystore.Hash(key), o.cost, req, o.limits)
	if err != nil {
		return res, driver.WrapKey("apikey: Verify", key, err)
	}
	return res, nil
}

// Code identifies the outcome of a verification: "" when valid, else a
// denial. The values are stable and are those of Better Auth, so clients
// can share their handling. Code.Status is the HTTP status and
// Code.Message a sentence for people.
type Code = keystore.Code

// Result is the outcome of [Manager.Verify]. A denial is a Result with
// Valid == false, never an error.
type Result struct {
	Valid      bool
	Code       Code          // "" when valid
	Status     int           // the HTTP status: 200 when valid, else Code.Status()
	TryAgainIn time.Duration // for CodeRateLimited, and CodeUsageExceeded before a refill; 0 otherwise
	// Key is the key after the verification's write when valid, the key as
	// read when denied, and nil when the key is unknown.
	Key *Key
	// DeniedBy names the limit that denied a verification answered
	// CodeRateLimited or CodeUsageExceeded, "" for every other answer:
	//   - "rateLimit": the key's rate limit ([CreateParams.RateLimit]; a
	//     key created without one has the manager's default, 10
	//     verifications per 24 hours unless [WithDefaultRateLimit] says
	//     otherwise);
	//   - "remaining": the key's quota ([CreateParams.Remaining]);
	//   - "limit:NAME": the key's named limit NAME ([LimitCost]);
	//   - "ownerLimit:NAME": the named limit NAME of the key's owner,
	//     shared by all their keys ([Manager.SetOwnerLimits]).
	DeniedBy string
}

// denied is a denial with code; limit and owner name the named limit that
// denied, as keystore.Plan and keystore.Result do.
func denied(code Code, tryAgainMs int64, limit string, owner bool, k *Key) Result {
	r := Result{Code: code, Status: code.Status(), TryAgainIn: time.Duration(tryAgainMs) * time.Millisecond, Key: k}
	switch {
	case code == CodeUsageExceeded:
		r.DeniedBy = "remaining"
	case code != CodeRateLimited:
	case limit == "":
		r.DeniedBy = "rateLimit"
	case owner:
		r.DeniedBy = "ownerLimit:" + limit
	default:
		r.DeniedBy = "limit:" + limit
	}
	return r
}

// invalid is the answer for a key that no stored key answers to.
func invalid() Result { return denied(CodeInvalid, 0, "", false, nil) }

func allowed(k *Key) Result { return Result{Valid: true, Status: 200, Key: k} }

// required is what a verification asks of a key's permissions: every one
// of all, and at least one of any when any is not empty.
type required struct {
	all, any []keystore.Permission
}

// claim is the keystore.Request of a verification at now (epoch ms) that
// spends cost and the named limits spend and requires r (nil: nothing).
func (r *required) claim(now, cost int64, spend []keystore.LimitSpend) keystore.Request {
	req := keystore.Request{Now: now, Cost: cost, Limits: spend}
	if r != nil {
		req.RequireAll, req.RequireAny = r.all, r.any
	}
	return req
}

// none reports whether r asks for nothing.
func (r *required) none() bool { return r == nil || (len(r.all) == 0 && len(r.any) == 0) }

// flatten lists a resource → actions map as permissions, in a stable
// order, refusing empty names.
func flatten(what string, p map[string][]string) ([]keystore.Permission, error) {
	if len(p) == 0 {
		return nil, invalidf("%s: no permission given", what)
	}
	if err := checkPermissions(p); err != nil {
		return nil, invalidf("%s: %v", what, err)
	}
	var out []keystore.Permission
	for res, actions := range p {
		if len(actions) == 0 {
			return nil, invalidf("%s: resource %q lists no action", what, res)
		}
		for _, a := range actions {
			out = append(out, keystore.Permission{Resource: res, Action: a})
		}
	}
	slices.SortFunc(out, func(a, b keystore.Permission) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Action, b.Action))
	})
	return slices.Compact(out), nil
}

// Permissions requires the key to hold every listed action (resource →
// actions). A key that lacks one is denied with CodeForbidden before
// anything is spent. Given with [AnyPermission], both must hold.
func Permissions(all map[string][]string) VerifyOption {
	ps, err := flatten("Permissions", all)
	ps = slices.Clip(ps) // an append never writes into the option's list
	return func(o *verifyOptions) {
		o.req.all, o.err = append(o.req.all, ps...), cmp.Or(o.err, err)
	}
}

// AnyPermission requires the key to hold at least one listed action
// (resource → actions). A key that holds none is denied with
// CodeForbidden before anything is spent.
func AnyPermission(any map[string][]string) VerifyOption {
	ps, err := flatten("AnyPermission", any)
	ps = slices.Clip(ps)
	return func(o *verifyOptions) {
		o.req.any, o.err = append(o.req.any, ps...), cmp.Or(o.err, err)
	}
}

// CheckVerify reports the error [Manager.Verify] would return for opts
// whatever the key: a Manager not made by [New] or [NewStorageOnly], a nil
// option, a negative cost, a bad permission list or named limit. The error
// wraps core.ErrInvalid. Middleware calls it when it is built, so that a
// bad option is an error then rather than on every request.
func (m *Manager) CheckVerify(opts ...VerifyOption) error {
	o := verifyOptions{cost: 1}
	return m.options("CheckVerify", opts, &o)
}

// options applies opts to o for op, refusing what Verify would. o is the
// caller's, so that it is the one copy that escapes (to the options and,
// through req, to the store): a copy returned by value would be a second.
func (m *Manager) options(op string, opts []VerifyOption, o *verifyOptions) error {
	if err := m.initialised(op); err != nil {
		return err
	}
	for i, opt := range opts {
		if opt == nil {
			return invalidf("%s: option %d of %d is nil", op, i+1, len(opts))
		}
		opt(o)
	}
	if o.cost < 0 {
		return invalidf("%s: cost %d is negative", op, o.cost)
	}
	if o.err != nil {
		return fmt.Errorf("%s: %w", op, o.err)
	}
	return nil
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
