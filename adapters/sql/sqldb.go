package sluicesql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
)

// openTimeout bounds the server probe of Open, which takes no context.
const openTimeout = 30 * time.Second

// Open wraps a database/sql pool, opened with any driver, in a [core.DB]:
// it is [NewDB] followed by core.New with opts (naming, schema). The
// server is probed as [New] describes, within 30 seconds.
func Open(db *sql.DB, d Dialect, opts ...core.Option) (*core.DB, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	a, err := NewDB(ctx, db, d)
	if err != nil {
		return nil, err
	}
	return core.New(a, opts...)
}

// NewDB returns the adapter on a database/sql pool.
//
// On SQLite a plain DSN (sql.Open("sqlite", "app.db")) behaves as one with
// [SQLiteOptions]: the engine switches the file to WAL, waits for a busy
// database itself when the DSN sets no busy timeout, and begins every
// transaction with BEGIN IMMEDIATE on a connection whose busy timeout it
// sets.
func NewDB(ctx context.Context, db *sql.DB, d Dialect) (*Adapter, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: sluicesql: nil *sql.DB", core.ErrInvalid)
	}
	if !d.valid() || !d.traits().oneWriter {
		return New(ctx, FromDB(db), Options{Dialect: d, Unwrap: db, TxUnwrap: unwrapSQL, BindTx: bindSQLTx(db)})
	}
	x := &sqliteDB{sqlExec: sqlExec{db}, b: db}
	a, err := New(ctx, x, Options{Dialect: d, Unwrap: db, TxUnwrap: unwrapSQL, BindTx: bindSQLTx(db)})
	if err == nil && a.e.busyWait > 0 {
		x.setBusyTimeout(a.e.busyWait)
	}
	return a, err
}

// WithTx returns an adapter of the same engine on a transaction the caller
// began on the same database; the caller commits or rolls it back.
func (a *Adapter) WithTx(tx *sql.Tx) *Adapter { return a.WithExecutor(FromTx(tx)) }

// FromDB is the [Beginner] of a database/sql pool.
func FromDB(db *sql.DB) Beginner { return sqlBeginner{sqlExec{db}, db} }

// FromConn is the [Beginner] of one database/sql connection.
func FromConn(c *sql.Conn) Beginner { return sqlBeginner{sqlExec{c}, c} }

// FromTx is the [Executor] of a database/sql transaction the caller owns.
func FromTx(tx *sql.Tx) Executor { return sqlTx{sqlExec{tx}, tx} }

func unwrapSQL(x Executor) any {
	switch v := x.(type) {
	case sqlBeginner:
		return v.b
	case sqlTx:
		return v.tx
	case *sqliteDB:
		return v.b
	case sqliteTx:
		return v.c
	}
	return x
}

// rowsOrNil keeps a nil *sql.Rows from becoming a non-nil Rows interface.
func rowsOrNil(r *sql.Rows, err error) (Rows, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// sqlQuerier is what *sql.DB, *sql.Conn and *sql.Tx run statements with.
type sqlQuerier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// sqlExec is the [Executor] of a database/sql pool, connection or
// transaction.
type sqlExec struct{ q sqlQuerier }

func (e sqlExec) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return e.q.ExecContext(ctx, q, args...)
}
func (e sqlExec) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	return rowsOrNil(e.q.QueryContext(ctx, q, args...))
}

// sqlPool is a *sql.DB or *sql.Conn: it begins transactions.
type sqlPool interface {
	sqlQuerier
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

type sqlBeginner struct {
	sqlExec
	b sqlPool
}

func (p sqlBeginner) Begin(ctx context.Context) (Tx, error) {
	tx, err := p.b.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return sqlTx{sqlExec{tx}, tx}, nil
}

type sqlTx struct {
	sqlExec
	tx *sql.Tx
}

func (t sqlTx) Commit(context.Context) error   { return t.tx.Commit() }
func (t sqlTx) Rollback(context.Context) error { return t.tx.Rollback() }
