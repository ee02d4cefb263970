package sluicesql

import (
	"context"
	"errors"

	"github.com/sluice-go/sluice/core"
)

// Adapter is the [core.Adapter] of every SQL database, over any [Executor].
// It also implements [core.Incrementer], [core.Transactor] and
// [core.Unwrapper]. It is safe for concurrent use when its executor is (a
// pool is; a transaction is not).
type Adapter struct {
	e *engine // shared by every adapter derived from the same New
	x Executor
	// inTx is true when x is a transaction: one the engine began, or the
	// caller's own (an Executor that is not a Beginner).
	inTx  bool
	depth int // savepoint nesting depth inside a transaction
}

var (
	_ core.Adapter     = (*Adapter)(nil)
	_ core.Incrementer = (*Adapter)(nil)
	_ core.Transactor  = (*Adapter)(nil)
	_ core.Unwrapper   = (*Adapter)(nil)
)

// engine holds what every adapter derived from one New shares.
type engine struct {
	opts     Options
	features Features
}

// Features are what the engine learned about the server when it opened.
type Features struct {
	Dialect Dialect
	// Server is the server's version text, such as "15.19" or
	// "10.11.19-MariaDB".
	Server string
	// MariaDB is true for MariaDB on the MySQL dialect.
	MariaDB bool
	// UpdateReturning: UPDATE … RETURNING (PostgreSQL, SQLite).
	UpdateReturning bool
	// InsertReturning: INSERT … RETURNING (PostgreSQL, SQLite, MariaDB 10.5+).
	InsertReturning bool
}

// New returns the engine's adapter on exec. It asks the server for its
// version, refuses a server of another dialect than opts.Dialect and, on
// MySQL, a session that does not read and write times in UTC.
func New(ctx context.Context, exec Executor, opts Options) (*Adapter, error) {
	return nil, errors.New("sluicesql: not implemented yet")
}
