package sluicesql

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Adapter is the [driver.Adapter] of every SQL database, over any [Executor].
// It also implements [driver.Incrementer], [driver.Transactor],
// [driver.SchemaChecker], [driver.TableCreator] and [driver.Unwrapper]. It is safe for concurrent use
// when its executor is (a pool is; a transaction is not).
type Adapter struct {
	e *engine // shared by every adapter derived from the same New
	x Executor
	// inTx is true when x is a transaction: one the engine began, or the
	// caller's own (an Executor that is not a Beginner).
	inTx  bool
	depth int  // savepoints open around x
	root  bool // x is the executor given to New
}

var (
	_ driver.Adapter       = (*Adapter)(nil)
	_ driver.Incrementer   = (*Adapter)(nil)
	_ driver.Transactor    = (*Adapter)(nil)
	_ driver.Unwrapper     = (*Adapter)(nil)
	_ driver.SchemaChecker = (*Adapter)(nil)
	_ driver.RecordOwner   = (*Adapter)(nil)
)

// engine holds what every adapter derived from one New shares.
type engine struct {
	opts     Options
	features Features
	t        *traits      // the dialect's traits, read once at New
	dollar   bool         // $n placeholders
	mysql    atomic.Int32 // MySQL: what the executor does, found at New (mysql_literal.go)
	// busyWait: how long the engine waits for a busy database itself (see
	// probeSQLite); 0 when the connection's own busy timeout does.
	busyWait time.Duration
	steer    steer // a test's steering of incrementOptimistic (mysql_optimistic.go)

	stmts   atomic.Pointer[map[string]string] // shape → statement text
	stmtsMu sync.Mutex                        // serialises additions to stmts
}

// Features are what the engine learned about the server when it opened.
type Features struct {
	Dialect Dialect
	// Server is the server's version text, such as "15.19" or
	// "10.11.19-MariaDB-0+deb12u1".
	Server string
	// MariaDB is true for MariaDB on the MySQL dialect.
	MariaDB bool
	// UpdateReturning: UPDATE … RETURNING (PostgreSQL, SQLite).
	UpdateReturning bool
	// InsertReturning: INSERT … RETURNING (PostgreSQL, SQLite, MariaDB 10.5+).
	InsertReturning bool
	// CausalReads: the server is a node of a MariaDB Galera cluster
	// (wsrep_on), where a read may not yet see a commit made on another
	// node. The reads whose answer is taken for the truth (FindOne,
	// FindMany and Count, the read before a guarded write, the row locked
	// before a write, the rows counted before an update) then wait, each
	// for itself (SET STATEMENT wsrep_sync_wait=1 FOR …), until the node
	// has applied every commit certified before them: a key created on one
	// node is found at once on every other, never a false INVALID or a
	// false denial. Inside a transaction the node ignores the wait, so each
	// transaction of the engine's own starts only once the node has caught
	// up, and an autocommit write that matched nothing runs once more
	// after it has (see catchUp); each such transaction also checks,
	// before COMMIT, that the node has not aborted it (see
	// stillInTransaction).
	CausalReads bool
}

// New returns the engine's adapter on exec. It asks the server for its
// version, and refuses a server of another dialect than opts.Dialect, an
// SQLite older than 3.35, and, on MySQL, a connection that reads times in
// another zone than UTC (see [Options]).
func New(ctx context.Context, exec Executor, opts Options) (*Adapter, error) {
	if opts.Name == "" {
		opts.Name = "sluicesql"
	}
	if exec == nil {
		return nil, fmt.Errorf("%w: %s: nil executor", core.ErrInvalid, opts.Name)
	}
	if !opts.Dialect.valid() {
		return nil, fmt.Errorf("%w: %s: unknown dialect %d (want sluicesql.Postgres, MySQL or SQLite)", core.ErrInvalid, opts.Name, opts.Dialect)
	}
	e := &engine{opts: opts, features: Features{Dialect: opts.Dialect}, t: opts.Dialect.traits()}
	switch opts.Placeholder {
	case Dollar:
		e.dollar = true
	case DefaultPlaceholder:
		e.dollar = e.t.dollar
	}
	_, begins := exec.(Beginner)
	a := &Adapter{e: e, x: exec, inTx: !begins, root: true}
	if err := a.probe(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

func (e *engine) name() string { return e.opts.Name }

// RecordsOwned reports that every record the adapter returns is a map made
// for that row alone, which core.DB may turn into its Row in place (see
// [driver.RecordOwner]).
func (a *Adapter) RecordsOwned() bool { return true }

// Dialect returns the adapter's dialect.
func (a *Adapter) Dialect() Dialect { return a.e.features.Dialect }

// Features returns what the engine learned about the server at New.
func (a *Adapter) Features() Features { return a.e.features }

// WithExecutor returns an adapter of the same engine (dialect, features,
// statement cache) on x, for example a transaction the caller began on the
// same database. An x that is not a [Beginner] is the caller's transaction:
// the adapter never commits or rolls it back.
func (a *Adapter) WithExecutor(x Executor) *Adapter {
	_, begins := x.(Beginner)
	return &Adapter{e: a.e, x: x, inTx: !begins}
}

// Executor returns the executor the adapter runs statements on.
func (a *Adapter) Executor() Executor { return a.x }

// Unwrap returns the ORM object the adapter runs on: [Options.Unwrap] on
// the executor given to New, or what [Options.TxUnwrap] makes of any other
// executor (a transaction; the executor itself without TxUnwrap).
func (a *Adapter) Unwrap() any {
	if a.root && a.e.opts.Unwrap != nil {
		return a.e.opts.Unwrap
	}
	if a.e.opts.TxUnwrap != nil {
		return a.e.opts.TxUnwrap(a.x)
	}
	return a.x
}

// newBuilder starts a statement, not cached, in the engine's placeholder style.
func (a *Adapter) newBuilder() *builder {
	return &builder{t: a.e.t, dollar: a.e.dollar, causal: a.e.features.CausalReads}
}

// Transaction runs fn in a transaction. At the top level the engine begins
// one, commits it when fn returns nil and rolls it back otherwise. Inside a
// transaction (the engine's or the caller's) it opens a savepoint instead,
// so an error from fn undoes fn's writes and nothing else. A panic in fn
// rolls back and propagates. The engine does not re-run fn: a deadlock or
// serialization failure comes back as core.ErrContention for the caller
// to decide; unless ctx is marked [driver.Rerunnable] (a policy's
// transaction): then the engine retries the transaction as a whole, as it
// retries its own (see retry).
func (a *Adapter) Transaction(ctx context.Context, fn func(ctx context.Context, tx driver.Adapter) error) error {
	if fn == nil {
		return fmt.Errorf("%w: %s: Transaction with a nil function", core.ErrInvalid, a.e.name())
	}
	run := func() error { return a.inTransaction(ctx, func(tx *Adapter) error { return fn(ctx, tx) }) }
	if !a.inTx && driver.IsRerunnable(ctx) {
		return a.retry(ctx, run)
	}
	return run()
}

// inTransaction runs fn in a new transaction or, inside one, a savepoint.
func (a *Adapter) inTransaction(ctx context.Context, fn func(tx *Adapter) error) (err error) {
	if a.inTx {
		return a.savepoint(ctx, fn)
	}
	b, ok := a.x.(Beginner)
	if !ok {
		return fmt.Errorf("%w: %s: executor %T cannot begin a transaction", core.ErrUnsupported, a.e.name(), a.x)
	}
	if err := a.catchUp(ctx); err != nil {
		return err
	}
	driver.AddRoundTrips(ctx, 2) // BEGIN, and COMMIT or ROLLBACK
	tx, err := b.Begin(ctx)
	if err != nil {
		return a.e.mapErr(err) // SQLite's BEGIN IMMEDIATE can time out busy
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	inner := &Adapter{e: a.e, x: tx, inTx: true}
	err = fn(inner)
	if err == nil {
		err = inner.stillInTransaction(ctx)
	}
	if err != nil {
		done = true
		if rerr := tx.Rollback(context.WithoutCancel(ctx)); rerr != nil && !errors.Is(rerr, context.Canceled) {
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return err
	}
	done = true
	return a.e.mapErr(tx.Commit(ctx))
}

// savepoint runs fn inside a savepoint of the current transaction.
func (a *Adapter) savepoint(ctx context.Context, fn func(tx *Adapter) error) (err error) {
	name := a.e.t.quoted("sluice_sp" + strconv.Itoa(a.depth+1))
	driver.AddRoundTrips(ctx, 2) // SAVEPOINT, and RELEASE or ROLLBACK TO
	if _, err := a.x.Exec(ctx, "SAVEPOINT "+name); err != nil {
		return a.e.mapErr(err)
	}
	inner := &Adapter{e: a.e, x: a.x, inTx: true, depth: a.depth + 1, root: a.root}
	done := false
	defer func() {
		if !done {
			_, _ = a.x.Exec(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT "+name)
		}
	}()
	if err := fn(inner); err != nil {
		done = true
		if _, rerr := a.x.Exec(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT "+name); rerr != nil {
			return errors.Join(err, fmt.Errorf("rollback to savepoint: %w", a.e.mapErr(rerr)))
		}
		_, _ = a.x.Exec(context.WithoutCancel(ctx), "RELEASE SAVEPOINT "+name)
		return err
	}
	done = true
	if _, err := a.x.Exec(ctx, "RELEASE SAVEPOINT "+name); err != nil {
		return a.e.mapErr(err)
	}
	return nil
}

// writeTx runs fn in a transaction of its own, retried as a whole when the
// database aborts it for concurrent writers, or directly in the current
// transaction.
func (a *Adapter) writeTx(ctx context.Context, fn func(tx *Adapter) error) error {
	if a.inTx {
		return a.e.mapErr(fn(a))
	}
	return a.retry(ctx, func() error { return a.inTransaction(ctx, fn) })
}
