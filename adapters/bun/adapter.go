package sluicebun

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-go/sluice/core"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"
)

// Adapter is the bun adapter. It implements [core.Adapter],
// [core.Incrementer], [core.Transactor] and [core.Unwrapper], and is safe
// for concurrent use. On a *bun.DB calls spread over its connection pool; on
// a bun.Tx or bun.Conn they take turns on that one connection.
type Adapter struct {
	db      bun.IDB
	conn    sqlConn // the database/sql handle under db
	gen     schema.QueryGen
	dialect dialect.Name
	// placeholders: bind values as $n parameters and run statements on conn
	// (PostgreSQL, unless WithQueryHooks); otherwise bun writes values into
	// the SQL text and statements run through db.
	placeholders bool
	// inTx: db is a transaction, so Transaction and the MySQL increment
	// run on it directly instead of opening a savepoint.
	inTx bool
}

var (
	_ core.Adapter     = (*Adapter)(nil)
	_ core.Incrementer = (*Adapter)(nil)
	_ core.Transactor  = (*Adapter)(nil)
	_ core.Unwrapper   = (*Adapter)(nil)
)

// Option configures [New].
type Option func(*Adapter)

// WithQueryHooks runs every statement through the bun.IDB, so that bun
// query hooks (bundebug, bunotel, ...) see them all. On PostgreSQL the
// adapter otherwise binds values as $n parameters on the database/sql
// handle beneath the bun.IDB (bun itself always writes values into the SQL
// text): the statement text then stays the same from call to call, and pgx
// prepares it once per connection instead of parsing and planning every
// call. Statements still start from bun's query builders either way; only
// PostgreSQL is affected (on MySQL and SQLite statements always go through
// bun).
func WithQueryHooks() Option { return func(a *Adapter) { a.placeholders = false } }

// New returns an adapter on db: a *bun.DB, a bun.Tx (the adapter then works
// inside that transaction) or a bun.Conn. The dialect must be PostgreSQL
// (pgdialect), MySQL or MariaDB (mysqldialect) or SQLite (sqlitedialect).
//
// Tables are expected to exist (see the gen package for their DDL). On
// MySQL, open the connection without parseTime or with loc=UTC (the
// driver's default), so that DATETIME values read back as UTC; on SQLite,
// use [SQLiteDSN] or its options so that concurrent writers wait for each
// other instead of failing with SQLITE_BUSY.
func New(db bun.IDB, opts ...Option) (*Adapter, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: sluicebun.New: nil bun.IDB", core.ErrInvalid)
	}
	name := db.Dialect().Name()
	switch name {
	case dialect.PG, dialect.MySQL, dialect.SQLite:
	default:
		return nil, fmt.Errorf("%w: sluicebun: dialect %s is not supported (want pg, mysql or sqlite)", core.ErrUnsupported, name)
	}
	a := &Adapter{db: db, conn: sqlConnOf(db), gen: db.NewSelect().DB().QueryGen(), dialect: name}
	a.placeholders = name == dialect.PG && a.conn != nil
	for _, opt := range opts {
		opt(a)
	}
	switch db.(type) {
	case bun.Tx, *bun.Tx:
		a.inTx = true
	}
	return a, nil
}

// Open wraps db in an adapter and the adapter in a [core.DB] configured by
// opts (naming, schema).
func Open(db bun.IDB, opts ...core.Option) (*core.DB, error) {
	a, err := New(db)
	if err != nil {
		return nil, err
	}
	return core.New(a, opts...)
}

// Unwrap returns the bun.IDB the adapter was built on (inside
// [Adapter.Transaction], the bun.Tx).
func (a *Adapter) Unwrap() any { return a.db }

// Dialect returns the name of the bun dialect in use.
func (a *Adapter) Dialect() dialect.Name { return a.dialect }

// Transaction runs fn in a transaction on the adapter's database, with an
// adapter bound to it; an error from fn rolls back. When the adapter was
// built on a bun.Tx, fn runs directly in that transaction: the caller who
// began it commits or rolls it back.
func (a *Adapter) Transaction(ctx context.Context, fn func(ctx context.Context, tx core.Adapter) error) error {
	return a.inTransaction(ctx, func(ctx context.Context, tx *Adapter) error { return fn(ctx, tx) })
}

func (a *Adapter) inTransaction(ctx context.Context, fn func(ctx context.Context, tx *Adapter) error) error {
	if a.inTx {
		return fn(ctx, a)
	}
	return a.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(ctx, &Adapter{db: tx, conn: tx.Tx, gen: a.gen, dialect: a.dialect, placeholders: a.placeholders, inTx: true})
	})
}

// retryDeadlocks runs fn in its own transaction and runs it again, up to
// deadlockAttempts times, when the database picked it as a deadlock victim:
// the transaction was rolled back, so nothing of it took effect. Inside a
// caller's transaction a deadlock is the caller's to handle.
func (a *Adapter) retryDeadlocks(ctx context.Context, fn func(ctx context.Context, tx *Adapter) error) error {
	for attempt := 1; ; attempt++ {
		err := a.inTransaction(ctx, fn)
		if err == nil || a.inTx || attempt == deadlockAttempts || !isDeadlock(err) || ctx.Err() != nil {
			return err
		}
	}
}

// deadlockAttempts bounds retryDeadlocks.
const deadlockAttempts = 5

// errNoRow reports that a write that had to return a row returned none.
var errNoRow = errors.New("sluicebun: the statement returned no row")
