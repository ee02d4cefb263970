package sluicebun

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"
)

// openTimeout bounds the server probes of New, which takes no context.
const openTimeout = 30 * time.Second

// New returns sluice's SQL engine running its statements through db: a
// *bun.DB, a bun.Conn, or a bun.Tx. Every statement goes through db's
// ExecContext and QueryContext, so bun's query hooks (bundebug, bunotel,
// your own) see each one, BEGIN, COMMIT and ROLLBACK included.
//
// On a bun.Tx the adapter joins the caller's transaction: sluice's writes
// commit or roll back with it, the caller ends it, and a nested
// Transaction opens a savepoint. On a *bun.DB or bun.Conn the engine begins
// its own transactions.
//
// The dialect must be pgdialect, mysqldialect or sqlitedialect. New asks
// the server for its version (within 30 seconds) and refuses a database of
// another dialect, a MySQL connection that does not read times in UTC, and
// a session whose string literals bun does not write byte for byte (MySQL's
// NO_BACKSLASH_ESCAPES, PostgreSQL's standard_conforming_strings off).
func New(db bun.IDB) (*sluicesql.Adapter, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: sluicebun.New: nil bun.IDB", core.ErrInvalid)
	}
	d, ok := dialects[db.Dialect().Name()]
	if !ok {
		return nil, fmt.Errorf("%w: sluicebun: dialect %s is not supported (want pg, mysql or sqlite)",
			core.ErrUnsupported, db.Dialect().Name())
	}
	// bun writes a time.Time into the SQL text itself, and
	// mysqldialect.WithTimeLocation makes it write another zone's wall clock.
	probe := time.Date(2001, 2, 3, 4, 5, 6, 7e6, time.UTC)
	if got := schema.NewQueryGen(db.Dialect()).FormatQuery("?", probe); !strings.Contains(got, "2001-02-03 04:05:06.007") {
		return nil, fmt.Errorf("%w: sluicebun: the bun dialect writes the UTC time %s as %s; sluice stores times in UTC "+
			"(drop mysqldialect.WithTimeLocation or set it to UTC)", core.ErrUnsupported, probe.Format(time.RFC3339Nano), got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	x := Executor(db)
	a, err := sluicesql.New(ctx, x, sluicesql.Options{
		Dialect:     d,
		Placeholder: sluicesql.Question, // bun replaces each ? with the value's literal
		Name:        "sluicebun",
		Unwrap:      db,
		TxUnwrap:    txUnwrap,
		BindTx:      bindTx(db),
	})
	if err != nil {
		return nil, err
	}
	// Through bun always, even where the engine may bypass it: a hook added
	// later sends every statement through bun's literals.
	if err := checkLiterals(ctx, executor{db: db}); err != nil {
		return nil, err
	}
	return a, nil
}

// Open wraps db in an adapter (see [New]) and the adapter in a [core.DB]
// configured by opts (naming, schema).
func Open(db bun.IDB, opts ...core.Option) (*core.DB, error) {
	a, err := New(db)
	if err != nil {
		return nil, err
	}
	return core.New(a, opts...)
}

// Executor returns the engine's executor on db, which must not be nil. A
// bun.Tx becomes a plain [sluicesql.Executor], the caller's transaction
// that the engine joins with savepoints and never ends; a *bun.DB or
// bun.Conn becomes a [sluicesql.Beginner]. With it an adapter from [New]
// can be bound to a transaction the caller began, sharing the adapter's
// statement cache without probing the server again:
//
//	tx, err := bunDB.BeginTx(ctx, nil)
//	inTx := adapter.WithExecutor(sluicebun.Executor(tx))
func Executor(db bun.IDB) sluicesql.Executor {
	switch db := db.(type) {
	case bun.Tx, *bun.Tx:
		return executor{db: db}
	case *bun.DB:
		if db.Dialect().Name() == dialect.PG {
			return beginner{executor{db: db, pool: db}}
		}
	}
	return beginner{executor{db: db}}
}

var dialects = map[dialect.Name]sluicesql.Dialect{
	dialect.PG:     sluicesql.Postgres,
	dialect.MySQL:  sluicesql.MySQL,
	dialect.SQLite: sluicesql.SQLite,
}

// txUnwrap gives back the bun.IDB behind an executor: inside a transaction
// the engine began, the bun.Tx.
func txUnwrap(x sluicesql.Executor) any {
	if u, ok := x.(interface{ unwrap() bun.IDB }); ok {
		return u.unwrap()
	}
	return x
}

// literalProbe holds what bun's string literals must carry through: a quote,
// a backslash (MySQL escapes it, unless NO_BACKSLASH_ESCAPES makes the escape
// part of the value), a question mark and a non-ASCII letter.
const literalProbe = `it's \ ? é`

// checkLiterals reads literalProbe back through bun, which writes it into
// the statement text, and refuses a session that stores something else.
func checkLiterals(ctx context.Context, x sluicesql.Executor) error {
	rows, err := x.Query(ctx, "SELECT ? AS v", literalProbe)
	if err != nil {
		return fmt.Errorf("sluicebun: checking string literals: %w", err)
	}
	defer rows.Close()
	var got any
	if rows.Next() {
		err = rows.Scan(&got)
	}
	if err == nil {
		err = rows.Err()
	}
	if b, ok := got.([]byte); ok {
		got = string(b)
	}
	if err != nil || got != literalProbe {
		return fmt.Errorf("%w: sluicebun: the string %q, written into SQL by bun, came back as %q (%v): "+
			"the session's quoting rules differ from bun's (MySQL sql_mode NO_BACKSLASH_ESCAPES? "+
			"PostgreSQL standard_conforming_strings off?)", core.ErrUnsupported, literalProbe, got, err)
	}
	return nil
}

// checkArgs refuses, before any I/O, strings that bun would not write byte
// for byte: it re-encodes invalid UTF-8 as U+FFFD (two distinct keys would
// share one row) and drops a NUL byte on MySQL. core.DB refuses both
// already; this holds for callers of the adapter itself too.
func checkArgs(args []any) error {
	for i, v := range args {
		if s, ok := v.(string); ok && (!utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0) {
			return fmt.Errorf("%w: sluicebun: argument %d is not valid UTF-8 free of NUL bytes, "+
				"which bun cannot write byte for byte", core.ErrInvalid, i+1)
		}
	}
	return nil
}

// executor runs statements through a bun.IDB. On its own it stands for the
// caller's bun.Tx.
type executor struct {
	db bun.IDB
	// pool is db when it is a PostgreSQL *bun.DB: see bound.
	pool *bun.DB
}

func (x executor) unwrap() bun.IDB { return x.db }

// bound returns the *sql.DB under a PostgreSQL *bun.DB that has no query
// hooks, or nil. bun writes every value into the statement text, so
// PostgreSQL parses and plans each statement anew: a third of the server's
// work on a rate-limit decision. With no hook to show the statement to,
// running it on bun's own *sql.DB with bind parameters changes nothing
// anyone can observe (the driver and the pool are bun's; a driver-level
// wrapper such as otelsql still sees it) but bun's query counter, and lets
// the driver reuse the server's plan. With a hook, bun runs everything.
func (x executor) bound() *sql.DB {
	if x.pool == nil || hasHooks(x.pool) {
		return nil
	}
	return x.pool.DB
}

// Exec runs a statement that returns no rows.
func (x executor) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := checkArgs(args); err != nil {
		return nil, err
	}
	if db := x.bound(); db != nil {
		return db.ExecContext(ctx, dollars(query), args...)
	}
	return x.db.ExecContext(ctx, query, args...)
}

// Query runs a statement that returns rows.
func (x executor) Query(ctx context.Context, query string, args ...any) (sluicesql.Rows, error) {
	if err := checkArgs(args); err != nil {
		return nil, err
	}
	var rows *sql.Rows
	var err error
	if db := x.bound(); db != nil {
		rows, err = db.QueryContext(ctx, dollars(query), args...)
	} else {
		rows, err = x.db.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err // not a nil *sql.Rows inside a non-nil interface
	}
	return rows, nil
}

// beginner is an executor on a *bun.DB or a bun.Conn.
type beginner struct{ executor }

// Begin starts a transaction through bun, which reports BEGIN to its hooks.
func (b beginner) Begin(ctx context.Context) (sluicesql.Tx, error) {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return txn{executor{db: tx}, tx}, nil
}

// txn is a transaction the engine began.
type txn struct {
	executor
	tx bun.Tx
}

// Commit commits through bun (its hooks see COMMIT). bun ties the
// transaction to the context given to Begin, so ctx is not needed.
func (t txn) Commit(context.Context) error { return t.tx.Commit() }

// Rollback rolls back through bun (its hooks see ROLLBACK).
func (t txn) Rollback(context.Context) error { return t.tx.Rollback() }
