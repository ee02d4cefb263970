package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// TxHandles is implemented by a harness whose ORM begins transactions of
// its own that sluice can charge in (the adapter implements
// driver.TxBinder): the cases of transactional charging (ratelimit's
// Limiter.In, apikey's Manager.In) need it and skip without it.
type TxHandles interface {
	// BeginTx begins a transaction with the ORM's own API on the pool
	// behind db (f.DB or one of f.DBs), and returns its handle as the ORM
	// gives it to its users: a *sql.Tx, a *gorm.DB in a transaction, a
	// bun.Tx, an ent transaction, a pgx.Tx.
	BeginTx(ctx context.Context, db *core.DB) (TxHandle, error)
}

// TxHandle is a transaction a [TxHandles] harness began: the ORM's handle,
// and the ORM's own commit and rollback.
type TxHandle struct {
	Handle   any
	Commit   func() error
	Rollback func() error
}

// The sentences of the contract the transactional-charging cases check.
const (
	ruleInTxKeeps = "a charge made through In on the caller's transaction handle, after a business write in it, " +
		"commits with the transaction and is refunded by its rollback, with the business write; the next decision outside is exact"
	ruleInTxRefused = "In on a transaction already committed or rolled back, on a value that is not a transaction, on a DB not bound " +
		"to one or bound from another core.DB fails with core.ErrInvalid (denied under fail-open) and charges nothing"
	ruleInTxRace = "24 concurrent callers, each in its own transaction over one pool or several, write, charge through In, and " +
		"commit or roll back (half the admitted ones roll back): the stored charge is exactly the committed admissions, within the limit, " +
		"and every committed transaction's business write is stored"
)

// txPools are the pools of the several-pools variant of the races.
const txPools = 4

// txCallers is how many transactions race in one case.
const txCallers = 24

// txMax is the limit the races charge against.
const txMax = 10

// InFunc binds a limiter to a transaction: ratelimit's Limiter.In, or a
// broken variant in the suite's own tests.
type inLimiter func(l *ratelimit.Limiter, tx any) *ratelimit.Limiter

// inKeys binds a manager to a transaction: apikey's Manager.In, or a
// broken variant.
type inKeys func(m *apikey.Manager, tx any) *apikey.Manager

// business writes the caller's own row in tx, named name.
func business(ctx context.Context, tx *core.DB, name string) error {
	_, err := tx.Create(ctx, CounterModel().Name, map[string]any{"name": name})
	return err
}

// businessRows counts the business rows named name that are stored.
func businessRows(ctx context.Context, f *Fixture, name string) (int64, error) {
	return f.DB.Count(ctx, CounterModel().Name, core.Eq("name", name))
}

// txRun begins a transaction on db, makes the business write named name
// in it, runs charge on the handle, and commits when end says so (given
// charge's answer), rolling back otherwise. committed reports a commit.
func txRun(ctx context.Context, f *Fixture, db *core.DB, name string, charge func(h any) (bool, error), end func(admitted bool) bool) (admitted, committed bool, err error) {
	th := f.Harness.(TxHandles)
	h, err := th.BeginTx(ctx, db)
	if err != nil {
		return false, false, fmt.Errorf("BeginTx: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = h.Rollback()
		}
	}()
	tx, err := db.WithTx(h.Handle)
	if err != nil {
		return false, false, fmt.Errorf("WithTx(%T): %w", h.Handle, err)
	}
	if err := business(ctx, tx, name); err != nil {
		return false, false, fmt.Errorf("the business write: %w", err)
	}
	if admitted, err = charge(h.Handle); err != nil {
		return false, false, err
	}
	// The transaction stays usable after the charge.
	if err := business(ctx, tx, name+"-after"); err != nil {
		return admitted, false, fmt.Errorf("the business write after the charge: %w", err)
	}
	done = true
	if !end(admitted) {
		return admitted, false, h.Rollback()
	}
	if err := h.Commit(); err != nil {
		return admitted, false, fmt.Errorf("commit: %w", err)
	}
	return admitted, true, nil
}

// rlInTxKeeps charges a limiter in a committed and a rolled-back
// transaction, then outside.
func rlInTxKeeps(in inLimiter) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error {
		clock := NewClock(time.UnixMilli(rlT0))
		l, err := ratelimit.New(ratelimit.Database(f.DB), ratelimit.WithClock(clock.Now))
		if err != nil {
			return err
		}
		rule := ratelimit.Rule{Window: time.Hour, Max: 4}
		charge := func(h any) (bool, error) {
			d, err := in(l, h).ConsumeN(ctx, "tx", rule, 2)
			return d.Allowed, err
		}
		for _, commit := range []bool{true, false} {
			admitted, committed, err := txRun(ctx, f, f.DB, fmt.Sprintf("keeps-%v", commit), charge, func(bool) bool { return commit })
			if err != nil || !admitted || committed != commit {
				return fmt.Errorf("the transaction to commit=%v: admitted %v, committed %v, %v", commit, admitted, committed, err)
			}
		}
		if count, _, err := rlRow(ctx, f, "tx"); err != nil || count != 2 {
			return fmt.Errorf("stored count %d (%v) after one committed and one rolled-back charge of 2, want 2", count, err)
		}
		if d, err := l.ConsumeN(ctx, "tx", rule, 2); err != nil || !d.Allowed || d.Remaining != 0 {
			return fmt.Errorf("outside after the rollback: %+v, %v; want admitted with 0 remaining", d, err)
		}
		if d, err := l.Consume(ctx, "tx", rule); err != nil || d.Allowed {
			return fmt.Errorf("outside, over the limit: %+v, %v; want denied", d, err)
		}
		for name, want := range map[string]int64{"keeps-true": 1, "keeps-true-after": 1, "keeps-false": 0, "keeps-false-after": 0} {
			if n, err := businessRows(ctx, f, name); err != nil || n != want {
				return fmt.Errorf("business rows %q: %d (%v), want %d", name, n, err, want)
			}
		}
		return nil
	})
}

// rlInTxRefused binds a limiter to what it must refuse.
func rlInTxRefused(t testing.TB, f *Fixture) {
	ctx := f.Ctx
	l, err := ratelimit.New(ratelimit.Database(f.DB), ratelimit.WithFailOpen())
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string, v *ratelimit.Limiter) {
		t.Helper()
		if d, err := v.Consume(ctx, "refused", rlRule); !errors.Is(err, core.ErrInvalid) || d.Allowed {
			t.Errorf("%s: %+v, %v; want denied with ErrInvalid", what, d, err)
		}
	}
	for _, commit := range []bool{true, false} {
		h, err := f.Harness.(TxHandles).BeginTx(ctx, f.DB)
		if err != nil {
			t.Fatal(err)
		}
		end := h.Rollback
		if commit {
			end = h.Commit
		}
		if err := end(); err != nil {
			t.Fatal(err)
		}
		refused(fmt.Sprintf("a transaction already ended (committed: %v)", commit), l.In(h.Handle))
	}
	refused("a string", l.In("not a transaction"))
	refused("nil", l.In(nil))
	refused("a DB not bound to a transaction", l.In(f.DB))
	dbs, err := f.DBs(2)
	if err != nil {
		t.Fatal(err)
	}
	err = dbs[1].InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		refused("a transaction of another core.DB", l.In(tx))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.DB.Count(ctx, core.ModelRateLimit); err != nil || n != 0 {
		t.Errorf("%d rate-limit rows (%v) after the refusals, want none", n, err)
	}
}

// rlInTxRace races transactions charging one key through in.
func rlInTxRace(pools int, in inLimiter) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error {
		clock := NewClock(time.UnixMilli(rlT0))
		dbs, err := f.DBs(pools)
		if err != nil {
			return err
		}
		rule := ratelimit.Rule{Window: time.Hour, Max: txMax}
		var ls []*ratelimit.Limiter
		for _, db := range dbs {
			l, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(clock.Now))
			if err != nil {
				return err
			}
			ls = append(ls, l)
		}
		// The key's row exists before the race: on MySQL the first
		// charges of a fresh key in concurrent transactions may deadlock
		// on InnoDB's gap locks (see Limiter.In).
		if d, err := ls[0].Consume(ctx, "race", rule); err != nil || !d.Allowed {
			return fmt.Errorf("the first charge: %+v, %v", d, err)
		}
		committed, err := txRace(ctx, f, dbs, func(ctx context.Context, i int, h any) (bool, error) {
			d, err := in(ls[i%len(ls)], h).Consume(ctx, "race", rule)
			return d.Allowed, err
		})
		if err != nil {
			return err
		}
		count, _, err := rlRow(ctx, f, "race")
		switch {
		case err != nil:
			return err
		case count != committed+1:
			return fmt.Errorf("stored count %d, want the %d committed admissions and the first charge", count, committed)
		case count > txMax:
			return fmt.Errorf("stored count %d over the limit %d", count, txMax)
		}
		return nil
	})
}

// txRace releases txCallers transactions, round-robin over dbs, each of
// which writes, charges and ends: half of the admitted ones (the 1st,
// 3rd, ... to be admitted) roll back, the others commit, and denied ones
// commit their business write alone. It returns how many admitted
// transactions committed, and fails unless every committed business
// write is stored and none of the others, and some admitted transactions
// committed and some rolled back.
func txRace(ctx context.Context, f *Fixture, dbs []*core.DB, charge func(ctx context.Context, i int, h any) (bool, error)) (int64, error) {
	var admits, committedAdmits, commits, rolledBack atomic.Int64
	var errs sync.Map
	Release(txCallers, func(i int) {
		admitted, committed, err := txRun(ctx, f, dbs[i%len(dbs)], "race", func(h any) (bool, error) { return charge(ctx, i, h) }, func(admitted bool) bool {
			return !admitted || admits.Add(1)%2 == 0
		})
		switch {
		case err != nil:
			errs.Store(i, err)
			return
		case committed:
			commits.Add(1)
			if admitted {
				committedAdmits.Add(1)
			}
		case admitted:
			rolledBack.Add(1)
		}
	})
	var first error
	errs.Range(func(_, v any) bool { first = v.(error); return false })
	if first != nil {
		return 0, fmt.Errorf("a transaction failed: %w", first)
	}
	if committedAdmits.Load() == 0 || rolledBack.Load() == 0 {
		return 0, fmt.Errorf("%d admitted transactions committed and %d rolled back: the race proves nothing", committedAdmits.Load(), rolledBack.Load())
	}
	for name, want := range map[string]int64{"race": commits.Load(), "race-after": commits.Load()} {
		if n, err := businessRows(ctx, f, name); err != nil || n != want {
			return 0, fmt.Errorf("business rows %q: %d (%v), want the %d committed", name, n, err, want)
		}
	}
	return committedAdmits.Load(), nil
}

// keyInTxKeeps verifies a key in a committed and a rolled-back
// transaction, then outside.
func keyInTxKeeps(in inKeys) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error {
		m, plain, err := txKey(ctx, f.DB, 4)
		if err != nil {
			return err
		}
		charge := func(h any) (bool, error) {
			r, err := in(m, h).Verify(ctx, plain, apikey.Cost(2))
			return r.Valid, err
		}
		for _, commit := range []bool{true, false} {
			admitted, committed, err := txRun(ctx, f, f.DB, fmt.Sprintf("keys-%v", commit), charge, func(bool) bool { return commit })
			if err != nil || !admitted || committed != commit {
				return fmt.Errorf("the transaction to commit=%v: valid %v, committed %v, %v", commit, admitted, committed, err)
			}
		}
		if r, err := m.Verify(ctx, plain, apikey.Cost(2)); err != nil || !r.Valid || r.Key.Remaining == nil || *r.Key.Remaining != 0 {
			return fmt.Errorf("outside after the rollback: %+v, %v; want valid with 0 left", r, err)
		}
		if r, err := m.Verify(ctx, plain); err != nil || r.Code != apikey.CodeUsageExceeded {
			return fmt.Errorf("outside, over quota: %+v, %v", r, err)
		}
		return nil
	})
}

// txKey creates a key with quota remaining and no rate limit, and
// returns a manager on db and the key.
func txKey(ctx context.Context, db *core.DB, remaining int64) (*apikey.Manager, string, error) {
	m, err := apikey.New(db)
	if err != nil {
		return nil, "", err
	}
	plain, _, err := m.Create(ctx, apikey.CreateParams{ReferenceID: "tx", Remaining: &remaining, RateLimit: &apikey.RateLimit{Enabled: false}})
	return m, plain, err
}

// keyInTxRefused verifies in what a manager must refuse.
func keyInTxRefused(t testing.TB, f *Fixture) {
	ctx := f.Ctx
	m, plain, err := txKey(ctx, f.DB, 5)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string, v *apikey.Manager) {
		t.Helper()
		if r, err := v.Verify(ctx, plain); !errors.Is(err, core.ErrInvalid) || r.Valid {
			t.Errorf("%s: %+v, %v; want ErrInvalid", what, r, err)
		}
	}
	h, err := f.Harness.(TxHandles).BeginTx(ctx, f.DB)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Commit(); err != nil {
		t.Fatal(err)
	}
	refused("a transaction already committed", m.In(h.Handle))
	refused("a string", m.In("not a transaction"))
	refused("a DB not bound to a transaction", m.In(f.DB))
	if r, err := m.Verify(ctx, plain, apikey.Cost(0)); err != nil || r.Key == nil || r.Key.Remaining == nil || *r.Key.Remaining != 5 {
		t.Errorf("the key after the refusals: %+v, %v; want 5 left", r, err)
	}
}

// keyInTxRace races transactions verifying one key through in.
func keyInTxRace(pools int, in inKeys) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error {
		dbs, err := f.DBs(pools)
		if err != nil {
			return err
		}
		admin, plain, err := txKey(ctx, f.DB, txMax)
		if err != nil {
			return err
		}
		var ms []*apikey.Manager
		for _, db := range dbs {
			m, err := apikey.New(db)
			if err != nil {
				return err
			}
			ms = append(ms, m)
		}
		committed, err := txRace(ctx, f, dbs, func(ctx context.Context, i int, h any) (bool, error) {
			r, err := in(ms[i%len(ms)], h).Verify(ctx, plain)
			return r.Valid, err
		})
		if err != nil {
			return err
		}
		r, err := admin.Verify(ctx, plain, apikey.Cost(0))
		switch {
		case err != nil:
			return err
		case r.Key == nil || r.Key.Remaining == nil:
			return fmt.Errorf("the key after the race: %+v", r)
		case *r.Key.Remaining != txMax-committed:
			return fmt.Errorf("%d left after %d committed verifications of a quota of %d", *r.Key.Remaining, committed, txMax)
		}
		return nil
	})
}
