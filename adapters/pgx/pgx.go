package sluicepgx

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
)

// DB is what sluice needs of pgx: *pgxpool.Pool, *pgx.Conn and pgx.Tx all
// have these methods.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

// transaction is how New recognises a transaction the caller began: pgx.Tx,
// or any wrapper of one that can commit and roll back.
type transaction interface {
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// New returns sluice's SQL engine running its statements on db, which is on
// PostgreSQL. It asks the server for its version, so give it a context with
// a deadline.
//
// A *pgxpool.Pool or *pgx.Conn is a pool: sluice begins, commits and rolls
// back its own transactions on it. A pgx.Tx (anything with Commit and
// Rollback) is the caller's transaction: sluice's writes commit or roll back
// with it, and its Transaction nests in it with savepoints. The adapter's
// Unwrap returns db, or inside one of sluice's transactions the pgx.Tx.
//
// A *pgx.Conn, like any pgx.Tx, serves one goroutine at a time: give sluice
// a *pgxpool.Pool to use it concurrently.
func New(ctx context.Context, db DB) (*sluicesql.Adapter, error) {
	switch x := db.(type) {
	case nil:
		return nil, errNilDB
	case *pgxpool.Pool:
		if x == nil {
			return nil, errNilDB
		}
	case *pgx.Conn:
		if x == nil {
			return nil, errNilDB
		}
	}
	return sluicesql.New(ctx, Executor(db), sluicesql.Options{
		Dialect:  sluicesql.Postgres,
		Name:     "sluicepgx",
		Unwrap:   db,
		TxUnwrap: unwrap,
	})
}

var errNilDB = fmt.Errorf("sluicepgx: New: nil DB: %w", core.ErrInvalid)

// Open returns a core.DB on db: [New], then core.New with opts.
func Open(ctx context.Context, db DB, opts ...core.Option) (*core.DB, error) {
	a, err := New(ctx, db)
	if err != nil {
		return nil, err
	}
	return core.New(a, opts...)
}

// Executor returns db as the engine's executor: a [sluicesql.Beginner] for
// a pool or connection, a plain [sluicesql.Executor] for a transaction the
// caller owns. With (*sluicesql.Adapter).WithExecutor it binds an adapter
// made once by [New] to the caller's transaction of one request, without
// asking the server again:
//
//	sdb, _ := core.New(adapter.WithExecutor(sluicepgx.Executor(tx)))
func Executor(db DB) sluicesql.Executor {
	if _, ok := db.(transaction); ok {
		return executor{db}
	}
	return beginner{executor{db}}
}

// unwrap maps the engine's executor back to the pgx object it runs on.
func unwrap(x sluicesql.Executor) any {
	switch e := x.(type) {
	case beginner:
		return e.db
	case executor:
		return e.db
	case tx:
		return e.db
	}
	return x
}

// executor runs statements on a pgx pool, connection or transaction. pgx
// takes PostgreSQL's $n placeholders as they are.
type executor struct{ db DB }

func (e executor) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tag, err := e.db.Exec(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return result(tag.RowsAffected()), nil
}

func (e executor) Query(ctx context.Context, query string, args ...any) (sluicesql.Rows, error) {
	r, err := e.db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

// beginner is an executor on a pool or connection, where sluice begins its
// own transactions.
type beginner struct{ executor }

func (b beginner) Begin(ctx context.Context) (sluicesql.Tx, error) {
	t, err := b.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return tx{executor{t}, t}, nil
}

// tx is a transaction sluice began.
type tx struct {
	executor
	tx pgx.Tx
}

func (t tx) Commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t tx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

// result is a statement's command tag as a sql.Result.
type result int64

func (r result) RowsAffected() (int64, error) { return int64(r), nil }

// LastInsertId is not available on PostgreSQL: the engine reads generated
// keys with RETURNING.
func (result) LastInsertId() (int64, error) {
	return 0, errors.New("sluicepgx: LastInsertId is not supported by PostgreSQL; use RETURNING")
}

// rows adapts pgx.Rows to the engine's Rows.
type rows struct{ pgx.Rows }

func (r rows) Columns() ([]string, error) {
	fds := r.FieldDescriptions()
	if fds == nil {
		return nil, r.Err()
	}
	names := make([]string, len(fds))
	for i, fd := range fds {
		names[i] = fd.Name
	}
	return names, nil
}

// Scan scans like pgx, then turns what pgx decodes into an *any and core
// does not read into a form it does: times into UTC (pgx gives timestamptz
// in the local zone), and pgtype values such as Numeric into their
// driver.Value (text for a numeric). bigint, text and boolean arrive as
// int64, string and bool already.
func (r rows) Scan(dest ...any) error {
	if err := r.Rows.Scan(dest...); err != nil {
		return err
	}
	for _, d := range dest {
		p, ok := d.(*any)
		if !ok {
			continue
		}
		switch v := (*p).(type) {
		case time.Time:
			*p = v.UTC()
		case driver.Valuer:
			x, err := v.Value()
			if err != nil {
				return err
			}
			*p = x
		}
	}
	return nil
}

// Close closes the rows and returns the query's error, if any: pgx reports
// a failed query only once its rows are closed.
func (r rows) Close() error {
	r.Rows.Close()
	return r.Err()
}
