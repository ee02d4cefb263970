package sluiceent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Adapter is a [driver.Adapter] on an ent driver: the SQL engine of
// [sluicesql.Adapter], whose statements run through the driver, so that a
// dialect.DebugDriver or any other driver wrapper sees every one of them.
// It also implements [driver.Incrementer], [driver.Transactor] (nested calls
// open savepoints), [driver.Unwrapper] and [driver.SchemaChecker]. It is safe
// for concurrent use when the driver is (an *entsql.Driver is; a
// transaction is not, as with database/sql).
type Adapter struct {
	*sluicesql.Adapter
	dialect string // dialect.Postgres, dialect.MySQL or dialect.SQLite
}

var (
	_ driver.Adapter       = (*Adapter)(nil)
	_ driver.Incrementer   = (*Adapter)(nil)
	_ driver.Transactor    = (*Adapter)(nil)
	_ driver.Unwrapper     = (*Adapter)(nil)
	_ driver.SchemaChecker = (*Adapter)(nil)
)

// openTimeout bounds the server probe of New and NewTx, which take no
// context of their own.
const openTimeout = 30 * time.Second

// New returns an adapter on drv: the *entsql.Driver given to the generated
// client (ent.NewClient(ent.Driver(drv))), a dialect.DebugDriver around it,
// or any driver whose Dialect is "postgres", "mysql" or "sqlite3". It asks
// the server for its version and refuses one of another dialect, and a
// MySQL session that does not read and write times in UTC.
//
// A driver that is also a dialect.Tx (the driver of a generated ent.Tx is)
// is the caller's transaction: sluice's writes commit or roll back with it,
// and [Adapter.Transaction] opens a savepoint in it instead of a
// transaction of its own.
func New(drv dialect.Driver) (*Adapter, error) {
	if drv == nil {
		return nil, fmt.Errorf("%w: sluiceent.New: nil driver", core.ErrInvalid)
	}
	if tx, ok := drv.(dialect.Tx); ok {
		return open(conn{tx}, drv.Dialect(), drv)
	}
	return open(pool{conn{drv}, drv}, drv.Dialect(), drv)
}

// NewTx returns an adapter bound to a transaction the caller started with
// drv.Tx(ctx), for a dialect ("postgres", "mysql" or "sqlite3"; use the
// driver's Dialect()). Every call runs in that transaction, and the caller
// commits or rolls it back. See also [Adapter.WithTx].
func NewTx(tx dialect.Tx, dialectName string) (*Adapter, error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: sluiceent.NewTx: nil transaction", core.ErrInvalid)
	}
	return open(conn{tx}, dialectName, tx)
}

// open starts the engine on exec, a pool or the caller's transaction, and
// probes the server through it.
func open(exec sluicesql.Executor, dialectName string, unwrap any) (*Adapter, error) {
	name, d, err := dialectOf(dialectName)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	drv, _ := unwrap.(dialect.Driver)
	a, err := sluicesql.New(ctx, exec, sluicesql.Options{
		Dialect:  d,
		Name:     "sluiceent",
		Unwrap:   unwrap,
		TxUnwrap: txUnwrap,
		BindTx:   bindTx(drv),
	})
	if err != nil {
		return nil, err
	}
	return &Adapter{Adapter: a, dialect: name}, nil
}

// WithTx returns a copy of a bound to tx, a transaction the caller started
// on the same database (for example with drv.Tx(ctx)). The caller commits or
// rolls it back; the copy shares a's statement cache.
func (a *Adapter) WithTx(tx dialect.Tx) *Adapter {
	return &Adapter{Adapter: a.WithExecutor(conn{tx}), dialect: a.dialect}
}

// Open wraps drv in a [core.DB], the portable handle: it is New followed by
// core.New with opts (naming, schema).
func Open(drv dialect.Driver, opts ...core.Option) (*core.DB, error) {
	a, err := New(drv)
	if err != nil {
		return nil, err
	}
	return core.New(a, opts...)
}

// Dialect returns ent's name of the adapter's dialect: "postgres", "mysql"
// or "sqlite3".
func (a *Adapter) Dialect() string { return a.dialect }

// dialectOf maps an ent dialect name to ent's own and the engine's.
func dialectOf(name string) (string, sluicesql.Dialect, error) {
	if name == "sqlite" { // the modernc driver name, a common slip for ent's "sqlite3"
		name = dialect.SQLite
	}
	// Instrumented drivers report names such as "postgres+otel"; ent's own
	// Driver.Dialect strips such suffixes the same way.
	for _, d := range []struct {
		ent    string
		engine sluicesql.Dialect
	}{{dialect.Postgres, sluicesql.Postgres}, {dialect.MySQL, sluicesql.MySQL}, {dialect.SQLite, sluicesql.SQLite}} {
		if strings.HasPrefix(name, d.ent) {
			return d.ent, d.engine, nil
		}
	}
	return "", 0, fmt.Errorf("%w: sluiceent: dialect %q is not supported (want %q, %q or %q)",
		core.ErrUnsupported, name, dialect.Postgres, dialect.MySQL, dialect.SQLite)
}

// txUnwrap gives back the ent transaction behind a transaction's executor.
func txUnwrap(x sluicesql.Executor) any {
	switch x := x.(type) {
	case conn:
		return x.q
	case txn:
		return x.tx
	}
	return x
}

// conn runs statements through ent's Exec and Query, or, for ent's own
// unwrapped driver and transaction, straight on the database/sql pool or
// transaction they would hand them to (see direct.go). On its own it is
// the caller's transaction, which the engine joins and never ends.
type conn struct{ q dialect.ExecQuerier }

// Exec runs a statement that returns no rows.
func (c conn) Exec(ctx context.Context, query string, args ...any) (entsql.Result, error) {
	if ex := plain(ctx, c.q); ex != nil {
		return ex.ExecContext(ctx, query, args...)
	}
	var res entsql.Result
	if err := c.q.Exec(ctx, query, args, &res); err != nil {
		return nil, err
	}
	return res, nil
}

// Query runs a statement that returns rows.
func (c conn) Query(ctx context.Context, query string, args ...any) (sluicesql.Rows, error) {
	if ex := plain(ctx, c.q); ex != nil {
		rows, err := ex.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, err // not a nil *sql.Rows in a non-nil interface
		}
		return rows, nil
	}
	rows := new(entsql.Rows)
	if err := c.q.Query(ctx, query, args, rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// pool is the driver itself: the engine begins its transactions on it.
type pool struct {
	conn
	drv dialect.Driver
}

// Begin starts a transaction with the driver's Tx, so that the driver's
// wrappers see it begin and end.
func (p pool) Begin(ctx context.Context) (sluicesql.Tx, error) {
	tx, err := p.drv.Tx(ctx)
	if err != nil {
		return nil, err
	}
	return txn{conn{tx}, tx}, nil
}

// txn is a transaction the engine began, and ends.
type txn struct {
	conn
	tx dialect.Tx
}

// Commit commits the transaction.
func (t txn) Commit(context.Context) error { return t.tx.Commit() }

// Rollback rolls the transaction back.
func (t txn) Rollback(context.Context) error { return t.tx.Rollback() }
