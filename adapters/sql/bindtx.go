package sluicesql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

var _ driver.TxBinder = (*Adapter)(nil)

// BindTx returns an adapter of the same engine on tx, a transaction the
// caller began with the adapter's ORM and ends themselves (see
// [driver.TxBinder]); core.DB.WithTx calls it. [Options.BindTx] turns the
// handle into the transaction's executor: [NewDB]'s adapter takes a
// *sql.Tx begun on its own *sql.DB (see [CheckTxOf]), each ORM adapter its
// ORM's transaction handle. The adapter never commits or rolls tx back;
// its Transaction opens a savepoint in tx. A transaction already ended is
// refused by its first statement with an error wrapping core.ErrInvalid,
// before anything is written.
func (a *Adapter) BindTx(tx any) (driver.Adapter, error) {
	if a.e.opts.BindTx == nil {
		return nil, fmt.Errorf("%w: %s: no way to bind a caller's transaction (Options.BindTx is nil)", core.ErrUnsupported, a.e.name())
	}
	if tx == nil || isNilPointer(tx) {
		return nil, fmt.Errorf("%w: %s: nil transaction %T", core.ErrInvalid, a.e.name(), tx)
	}
	x, err := a.e.opts.BindTx(tx)
	if err != nil {
		return nil, err
	}
	if _, begins := x.(Beginner); begins || x == nil {
		return nil, fmt.Errorf("%w: %s: %T is not a transaction, it begins them", core.ErrInvalid, a.e.name(), tx)
	}
	return a.WithExecutor(x), nil
}

// NotATx is the error of an [Options.BindTx] given a handle it does not
// take: it names the handle's type and the types it takes.
func NotATx(name string, tx any, takes string) error {
	return fmt.Errorf("%w: %s: %T is not a transaction handle this adapter takes (it takes %s)", core.ErrInvalid, name, tx, takes)
}

// CheckTxOf refuses, wrapping core.ErrInvalid, a transaction begun on
// another pool than db: a transaction of another database, or of another
// pool on the same one (bind it to an adapter opened on that pool). It
// returns nil when tx is db's, and when database/sql does not say which
// pool began tx.
func CheckTxOf(tx *sql.Tx, db *sql.DB) error {
	if tx == nil || db == nil {
		return nil
	}
	f := reflect.ValueOf(tx).Elem().FieldByName("db") // database/sql's own field: read, never written
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.Type() != reflect.TypeOf(db) {
		return nil
	}
	if f.Pointer() != reflect.ValueOf(db).Pointer() {
		return fmt.Errorf("%w: the *sql.Tx was begun on another *sql.DB than the adapter's: another database, or another pool (begin it on the adapter's own pool)", core.ErrInvalid)
	}
	return nil
}

// bindSQLTx is NewDB's Options.BindTx: a *sql.Tx of db.
func bindSQLTx(db *sql.DB) func(tx any) (Executor, error) {
	return func(tx any) (Executor, error) {
		t, ok := tx.(*sql.Tx)
		if !ok {
			return nil, NotATx("sluicesql", tx, "a *sql.Tx")
		}
		if err := CheckTxOf(t, db); err != nil {
			return nil, fmt.Errorf("sluicesql: %w", err)
		}
		return FromTx(t), nil
	}
}

// isNilPointer reports a typed nil pointer in an interface.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// endedTx reports an error of a statement run on a transaction that has
// ended (database/sql's ErrTxDone; executors of other drivers wrap it) or
// that PostgreSQL aborted after an earlier error (25P02).
func (e *engine) endedTx(err error) bool {
	if errors.Is(err, sql.ErrTxDone) {
		return true
	}
	c, fam, ok := e.code(err)
	return ok && fam == Postgres && c == "25P02"
}

var _ driver.LockingFinder = (*Adapter)(nil)

// FindOneForUpdate is FindOne that, inside a transaction, locks the row
// with SELECT … FOR UPDATE and reads its latest committed version (see
// [driver.LockingFinder]). On SQLite, whose transactions hold the whole
// database, and outside a transaction, it is FindOne.
func (a *Adapter) FindOneForUpdate(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	if !a.inTx || a.e.t.oneWriter {
		return a.FindOne(ctx, t, where)
	}
	q, args := a.stmt(t, kindLockFirst, where, nil, nil, func(b *builder) { b.selectFirst(t, where, true) })
	q, args, err := a.inlined(q, args)
	if err != nil {
		return nil, err
	}
	return retried(a, ctx, func() (driver.Record, error) { return a.queryOne(ctx, q, args) })
}
