package sluicesql

import (
	"context"
	"database/sql"
)

// Rows is what a query returns, read once from the first row to the last:
// *sql.Rows has these methods, and so do ent's sql.Rows and the pgx
// adapter's wrapper.
type Rows interface {
	Columns() ([]string, error)
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Executor runs the engine's statements the way one ORM or driver does, so
// that the ORM's hooks and logger see every statement and a transaction the
// caller began is joined. Arguments arrive in the engine's placeholder style
// for the dialect (see [Options.Placeholder]) and are int64, string, bool,
// time.Time (UTC), or nil.
//
// An Executor that also implements [Beginner] is on a pool: the engine
// begins its own transactions on it. One that does not is taken to be
// inside a transaction that its caller owns: the engine then nests with
// savepoints and never commits or rolls back the caller's transaction.
type Executor interface {
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// Beginner is an [Executor] on a pool that can begin a transaction.
type Beginner interface {
	Executor
	Begin(ctx context.Context) (Tx, error)
}

// Tx is a transaction begun by a [Beginner]. Statements run through its
// Executor methods until Commit or Rollback.
type Tx interface {
	Executor
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}
