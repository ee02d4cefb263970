package sluiceent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"entgo.io/ent/dialect"

	"github.com/sluice-go/sluice/core"
)

// Adapter is a [core.Adapter] on an ent driver. It also implements
// [core.Incrementer], [core.Transactor] and [core.Unwrapper]. It is safe for
// concurrent use when the driver is (an *entsql.Driver is; a transaction is
// not, as with database/sql).
type Adapter struct {
	drv     dialect.Driver      // nil when bound to a bare dialect.Tx
	exec    dialect.ExecQuerier // where statements run: drv or the transaction
	tx      dialect.Tx          // non-nil inside a transaction
	dialect string              // dialect.Postgres, dialect.MySQL or dialect.SQLite
	stmts   *stmtCache          // shared by every adapter derived from the same New
}

var (
	_ core.Adapter     = (*Adapter)(nil)
	_ core.Incrementer = (*Adapter)(nil)
	_ core.Transactor  = (*Adapter)(nil)
	_ core.Unwrapper   = (*Adapter)(nil)
)

// New returns an adapter on drv: the *entsql.Driver given to the generated
// client (ent.NewClient(ent.Driver(drv))), a dialect.DebugDriver around it,
// or any driver whose Dialect is "postgres", "mysql" or "sqlite3".
//
// A driver that is also a dialect.Tx (the driver of a generated ent.Tx is)
// counts as a transaction: [Adapter.Transaction] then runs its function on it
// directly instead of nesting.
func New(drv dialect.Driver) (*Adapter, error) {
	if drv == nil {
		return nil, fmt.Errorf("%w: sluiceent.New: nil driver", core.ErrInvalid)
	}
	name, err := dialectNameOf(drv.Dialect())
	if err != nil {
		return nil, err
	}
	a := &Adapter{drv: drv, exec: drv, dialect: name, stmts: new(stmtCache)}
	if tx, ok := drv.(dialect.Tx); ok {
		a.tx = tx
	}
	return a, nil
}

// NewTx returns an adapter bound to a transaction the caller started with
// drv.Tx(ctx), for a dialect ("postgres", "mysql" or "sqlite3"; use the
// driver's Dialect()). Every call runs in that transaction, and the caller
// commits or rolls it back. See also [Adapter.WithTx].
func NewTx(tx dialect.Tx, dialectName string) (*Adapter, error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: sluiceent.NewTx: nil transaction", core.ErrInvalid)
	}
	name, err := dialectNameOf(dialectName)
	if err != nil {
		return nil, err
	}
	return &Adapter{exec: tx, tx: tx, dialect: name, stmts: new(stmtCache)}, nil
}

// WithTx returns a copy of a bound to tx, a transaction the caller started
// on the same database (for example with drv.Tx(ctx)). The caller commits or
// rolls it back.
func (a *Adapter) WithTx(tx dialect.Tx) *Adapter {
	return &Adapter{drv: a.drv, exec: tx, tx: tx, dialect: a.dialect, stmts: a.stmts}
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

// Dialect returns "postgres", "mysql" or "sqlite3".
func (a *Adapter) Dialect() string { return a.dialect }

// Unwrap returns the ent object the adapter runs on: the dialect.Driver it
// was made with, or the dialect.Tx it is bound to.
func (a *Adapter) Unwrap() any {
	if a.tx != nil {
		return a.tx
	}
	return a.drv
}

// Transaction runs fn in a transaction begun with the driver's Tx. Inside a
// transaction already, fn runs on it directly.
func (a *Adapter) Transaction(ctx context.Context, fn func(ctx context.Context, tx core.Adapter) error) error {
	if a.tx != nil {
		return fn(ctx, a)
	}
	return a.inTx(ctx, func(ctx context.Context, tx *Adapter) error { return fn(ctx, tx) })
}

// inTx runs fn in a new transaction, or directly when a is bound to one
// already. A panic in fn rolls back and propagates.
func (a *Adapter) inTx(ctx context.Context, fn func(ctx context.Context, tx *Adapter) error) (err error) {
	if a.tx != nil {
		return fn(ctx, a)
	}
	tx, err := a.drv.Tx(ctx)
	if err != nil {
		return a.mapErr(err) // SQLite's BEGIN IMMEDIATE can time out busy
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback()
		}
	}()
	if err := fn(ctx, a.WithTx(tx)); err != nil {
		done = true
		if rerr := tx.Rollback(); rerr != nil {
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return err
	}
	done = true
	return a.mapErr(tx.Commit())
}

func dialectName(name string) (string, error) {
	// Instrumented drivers report names such as "postgres+otel"; ent's own
	// Driver.Dialect strips such suffixes the same way.
	for _, d := range []string{dialect.Postgres, dialect.MySQL, dialect.SQLite} {
		if strings.HasPrefix(name, d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: sluiceent: dialect %q is not supported (want %q, %q or %q)",
		core.ErrUnsupported, name, dialect.Postgres, dialect.MySQL, dialect.SQLite)
}

func dialectNameOf(name string) (string, error) {
	if name == "sqlite" { // the modernc driver name, a common slip for ent's "sqlite3"
		name = dialect.SQLite
	}
	return dialectName(name)
}
