package core

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core/driver"
)

// WithTx returns a DB bound to tx, a transaction the caller began on db's
// database with their own ORM and commits or rolls back themselves: a
// *sql.Tx, a *gorm.DB in a transaction, a bun.Tx, an ent transaction or a
// pgx.Tx, whichever db's adapter runs on (see [driver.TxBinder]). Every call
// on the returned DB runs in tx, so its writes commit or roll back with the
// caller's; its [DB.InTx] opens a savepoint. It shares db's schema and
// costs an allocation or two, not a round trip: bind one per transaction.
//
// tx may also be a DB already bound to a transaction of db (the tx of
// [DB.InTx], or one WithTx returned), which is returned as it is.
//
// WithTx fails with an error wrapping [ErrInvalid], before any statement,
// when tx is nil, is not a transaction handle db's adapter takes, is a DB
// not bound to a transaction or bound from another DB than db (another
// database, or other table names), or is a transaction the adapter can
// tell belongs to another database; with [ErrUnsupported] when db's
// adapter cannot run on a caller's transaction. A transaction already
// committed or rolled back is refused by the first statement run on it,
// with an error wrapping ErrInvalid that writes nothing.
func (db *DB) WithTx(tx any) (*DB, error) {
	const op = "WithTx"
	if err := db.initialised(op, ""); err != nil {
		return nil, err
	}
	if tx == nil {
		return nil, invalid(op, "", "nil transaction")
	}
	if d, ok := tx.(*DB); ok {
		switch {
		case d == nil || d.adapter == nil:
			return nil, invalid(op, "", "the *core.DB is not initialised")
		case !d.inTx:
			return nil, invalid(op, "", "the *core.DB is not bound to a transaction: pass the transaction handle, or the tx of InTx")
		case d.Root() != db.Root():
			return nil, invalid(op, "", "the *core.DB is bound to a transaction of another core.DB (another database, or other table names)")
		}
		return d, nil
	}
	b, ok := db.adapter.(driver.TxBinder)
	if !ok {
		return nil, &Error{Op: op, Kind: ErrUnsupported, Err: fmt.Errorf("adapter %T cannot run on a caller's transaction (driver.TxBinder)", db.adapter)}
	}
	a, err := b.BindTx(tx)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	if a == nil {
		return nil, &Error{Op: op, Err: fmt.Errorf("adapter %T bound %T to no adapter", db.adapter, tx)}
	}
	return db.bind(a), nil
}

// InTransaction reports whether db is bound to a transaction: the tx of
// [DB.InTx], or a DB that [DB.WithTx] returned.
func (db *DB) InTransaction() bool { return db != nil && db.inTx }

// Root returns the DB that db was bound from by [DB.InTx] or [DB.WithTx],
// through any nesting; db itself when it is not bound to a transaction.
func (db *DB) Root() *DB {
	if db == nil || db.root == nil {
		return db
	}
	return db.root
}

// FindOneForUpdate is [DB.FindOne] that, on a DB bound to a transaction,
// locks the row it returns until the transaction ends and reads its
// latest committed version (see [driver.LockingFinder]): what a read must
// be inside a caller's REPEATABLE READ transaction on MySQL when a
// guarded write is decided on it. Elsewhere, and on an adapter without
// driver.LockingFinder, it is FindOne.
func (db *DB) FindOneForUpdate(ctx context.Context, model string, where ...Where) (Row, bool, error) {
	lf, ok := db.adapterLocking()
	if !ok {
		return db.FindOne(ctx, model, where...)
	}
	const op = "FindOneForUpdate"
	t, w, err := db.prepare(op, model, where)
	if err != nil {
		return nil, false, err
	}
	rec, err := lf.FindOneForUpdate(ctx, t, w)
	return db.result(op, t, rec, err)
}

// adapterLocking is db's adapter as a driver.LockingFinder, when db is
// bound to a transaction and the adapter is one.
func (db *DB) adapterLocking() (driver.LockingFinder, bool) {
	if db == nil || !db.inTx {
		return nil, false
	}
	lf, ok := db.adapter.(driver.LockingFinder)
	return lf, ok
}
