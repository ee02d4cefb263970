package sluicegorm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sluice-go/sluice/core"
	"gorm.io/gorm"
)

// dialect is the SQL dialect behind the *gorm.DB, from its Dialector.Name().
type dialect uint8

const (
	postgres dialect = iota + 1
	mysql            // MySQL and MariaDB
	sqlite
)

// Adapter is the sluice adapter over a *gorm.DB. It implements
// core.Adapter, core.Incrementer (natively, one guarded statement on
// PostgreSQL and SQLite, a short locking transaction on MySQL and MariaDB),
// core.Transactor and core.Unwrapper. An Adapter is safe for concurrent use
// when its *gorm.DB is, that is unless it wraps a transaction.
type Adapter struct {
	db      *gorm.DB
	dialect dialect
	tables  *sync.Map // *core.Table → *tableSQL, shared with transaction adapters
}

var (
	_ core.Adapter     = (*Adapter)(nil)
	_ core.Incrementer = (*Adapter)(nil)
	_ core.Transactor  = (*Adapter)(nil)
	_ core.Unwrapper   = (*Adapter)(nil)
)

// New returns an adapter on db, which may be a transaction (db.Begin()):
// every call then runs inside it, and Transaction opens a savepoint. Any
// conditions or model already chained on db are ignored. New fails with
// core.ErrUnsupported for a dialect other than postgres, mysql or sqlite.
func New(db *gorm.DB) (*Adapter, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: sluicegorm.New: nil *gorm.DB", core.ErrInvalid)
	}
	if db.Dialector == nil {
		return nil, fmt.Errorf("%w: sluicegorm.New: the *gorm.DB has no Dialector (open it with gorm.Open)", core.ErrInvalid)
	}
	var d dialect
	switch name := db.Dialector.Name(); name {
	case "postgres":
		d = postgres
	case "mysql":
		d = mysql
	case "sqlite":
		d = sqlite
	default:
		return nil, fmt.Errorf("%w: sluicegorm: dialect %q (supported: postgres, mysql, sqlite)", core.ErrUnsupported, name)
	}
	// NewDB drops whatever the caller chained (Model, Where, Table, ...)
	// while keeping the connection pool or transaction, logger and plugins.
	return &Adapter{db: db.Session(&gorm.Session{NewDB: true}), dialect: d, tables: new(sync.Map)}, nil
}

// Open wraps db in an adapter and the adapter in a core.DB, with the given
// core options (naming, schema, ...).
func Open(db *gorm.DB, opts ...core.Option) (*core.DB, error) {
	a, err := New(db)
	if err != nil {
		return nil, err
	}
	return core.New(a, opts...)
}

// Unwrap returns the *gorm.DB the adapter runs on: inside a Transaction, the
// transaction's.
func (a *Adapter) Unwrap() any { return a.db }

// with returns an adapter on tx that shares a's statement cache.
func (a *Adapter) with(tx *gorm.DB) *Adapter {
	// NewDB: every call starts a fresh statement (see stmt.query).
	return &Adapter{db: tx.Session(&gorm.Session{NewDB: true}), dialect: a.dialect, tables: a.tables}
}

// inTx reports whether the adapter's *gorm.DB is a transaction.
func (a *Adapter) inTx() bool {
	c, ok := a.db.Statement.ConnPool.(gorm.TxCommitter)
	return ok && c != nil
}

// Transaction runs fn in a transaction: a new one, or a savepoint when the
// adapter already runs in a transaction. An error from fn, or a panic,
// rolls it back.
func (a *Adapter) Transaction(ctx context.Context, fn func(ctx context.Context, tx core.Adapter) error) error {
	return a.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return fn(ctx, a.with(tx))
	})
}

// atomically runs fn in a transaction, or directly when the adapter is
// already in one: the caller's transaction then holds the locks, and the
// savepoint round trips would buy nothing.
func (a *Adapter) atomically(ctx context.Context, fn func(tx *Adapter) error) error {
	if a.inTx() {
		return fn(a)
	}
	return a.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return fn(a.with(tx)) })
}

// errNoRow reports a statement that had to return a row and did not.
var errNoRow = errors.New("sluicegorm: the statement returned no row")
