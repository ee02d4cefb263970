package ratelimit

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core"
)

// In returns a view of l that charges inside tx, a transaction the caller
// began on the limiter's database with their own ORM and ends themselves:
// a *sql.Tx, a *gorm.DB in a transaction, a bun.Tx, an ent transaction, a
// pgx.Tx, or a *core.DB bound to one (see [core.DB.WithTx]). The view's
// decisions are written in tx: the caller's commit keeps them, a rollback
// refunds them, as it does the caller's own writes.
//
//	tx, _ := sqlDB.BeginTx(ctx, nil)
//	// ... the business write, in tx ...
//	d, err := limiter.In(tx).Consume(ctx, key, rule)
//	// ... commit tx when d.Allowed, roll it back otherwise ...
//
// A view shares l's configuration (mode, clock, attempts, failure policy,
// observer) and costs a few small allocations, no round trip: make one per
// transaction, or per call. It keeps no memory of its own, and neither
// reads nor writes l's: no remembered window starts, no denial cache, so a
// rollback leaves nothing behind that could disagree with the database,
// and the next decision outside is exact. Its reads of a key's row lock
// the row (SELECT … FOR UPDATE on MySQL and MariaDB, where a plain read in
// a REPEATABLE READ transaction would see an old snapshot).
//
// What it costs: a charged key's row stays locked until the caller commits
// or rolls back, so a second transaction charging the same key waits for
// the first to end (on SQLite the whole database is locked by the first
// write). Keep such transactions short. A deadlock or serialization
// failure inside tx (two transactions charging two keys in opposite
// orders, say) comes back wrapping core.ErrContention: the database has
// then aborted tx, which the caller rolls back and may repeat. The
// engine's own races (a unique conflict on a fresh key, a guarded write
// that loses) never abort tx: PostgreSQL's inserts skip a taken key with
// ON CONFLICT DO NOTHING, and core's fallback runs each attempt in a
// savepoint.
//
// What is refused, with an error wrapping core.ErrInvalid from every call
// of the view and nothing charged: a limiter without [Database] storage; a
// limiter [WithWriteCombining] (a combined write charges several callers'
// requests at once, and one caller's rollback would refund the others'); a
// limiter with leases (units claimed ahead and held in memory, which a
// rollback could not return);
// [Limiter.Reset] and [Limiter.ResetRule] (the denial caches of every
// limiter could not follow a rollback), and [Limiter.StartPruning]; a nil
// tx, a handle the limiter's adapter does not take, a *core.DB bound from
// another core.DB, and a transaction the adapter can tell belongs to
// another database (see each adapter's BindTx). A transaction already
// committed or rolled back is refused by its first statement, with an error
// wrapping core.ErrInvalid, denied whatever the failure policy.
//
// In on a view binds l's own limiter anew.
func (l *Limiter) In(tx any) *Limiter {
	if l != nil && l.parent != nil {
		l = l.parent
	}
	if err := l.usable(); err != nil {
		return &Limiter{txErr: err}
	}
	v := &Limiter{parent: l, store: l.store, clock: l.clock, mode: l.mode, failOpen: l.failOpen,
		attempts: l.attempts, longest: l.longest, observe: l.observe, start: l.start, startMs: l.startMs, startNs: l.startNs,
		newTicker: l.newTicker}
	ds, ok := l.store.(*dbStorage)
	switch {
	case !ok:
		v.txErr = invalidf("In: charging in a transaction needs Database storage, not %s", storageName(l.store))
	case l.comb != nil:
		v.txErr = invalidf("In: WithWriteCombining cannot charge in a caller's transaction: a combined write charges several callers' requests at once, and one rollback would refund them all; charge with a limiter without it")
	case l.leases != nil:
		v.txErr = invalidf("In: leases cannot charge in a caller's transaction: a lease claims units for many requests ahead, held in memory, which a rollback could not return; charge with a limiter without them")
	}
	if v.txErr != nil {
		return v
	}
	db, err := ds.db.WithTx(tx)
	if err != nil {
		v.txErr = fmt.Errorf("ratelimit: In: %w", err)
		return v
	}
	v.store = txStorage(db, ds)
	return v
}

// txStorage returns a storage on db, bound to a transaction, for base's
// rows: no memory of its own (no remembered window starts; GCRA's memo,
// which only picks the guarded write to try first, its own and small),
// locking reads, and base's schema check.
func txStorage(db *core.DB, base *dbStorage) *dbStorage {
	if base.base != nil {
		base = base.base // a view's storage: the limiter's own holds the check (a view's has no gate)
	}
	st := &dbStorage{db: db, tx: true, base: base, keySize: base.keySize}
	st.tats.once.Do(func() { st.tats.m = newBoundedMap(1, func(tat int64) int64 { return tat + tatMemoGrace }) })
	return st
}

// readRow reads key's row for the counter-row protocol. Inside a caller's
// transaction it is a locking read (core.DB.FindOneForUpdate): under
// REPEATABLE READ on MySQL a plain read there would answer from the
// transaction's snapshot, older than the rows the guarded writes see, and
// a claim would lose its races to a state it cannot read.
func (s *dbStorage) readRow(ctx context.Context, key string) (core.Row, bool, error) {
	if s.tx {
		return s.db.FindOneForUpdate(ctx, model, core.Eq("key", key))
	}
	return s.db.FindOne(ctx, model, core.Eq("key", key))
}

var (
	errTxReset   = invalidf("Reset in a caller's transaction: the denial caches could not follow a rollback; reset outside the transaction")
	errTxPruning = invalidf("StartPruning on a view bound to a transaction (Limiter.In): prune with the limiter itself")
)
