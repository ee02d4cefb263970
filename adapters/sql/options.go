package sluicesql

// Placeholder is how a statement marks its arguments.
type Placeholder uint8

const (
	// DefaultPlaceholder is the dialect's own: $1, $2, … on PostgreSQL, ? on
	// MySQL and SQLite.
	DefaultPlaceholder Placeholder = iota
	// Dollar is $1, $2, ….
	Dollar
	// Question is ?, for executors that rewrite placeholders themselves
	// (gorm and bun turn ? into their dialect's form).
	Question
)

// Codes extracts the code of a driver's error: the SQLSTATE on PostgreSQL
// ("23505"), the error number on MySQL ("1062"), the extended result code on
// SQLite ("2067"). ok is false when err carries none.
//
// The engine already recognises, without importing any driver, errors that
// have a SQLState() string method (pgx, lib/pq), a Code() int method
// (modernc.org/sqlite, glebarez/go-sqlite) and go-sql-driver/mysql's
// "Error 1062 (23000): …" text; an executor gives its own Codes only for a
// driver none of these cover.
type Codes func(err error) (code string, ok bool)

// Options configure [New].
type Options struct {
	// Dialect is the database behind the executor: [Postgres], [MySQL]
	// (MySQL or MariaDB) or [SQLite]. Required. New checks it against the
	// server and refuses a mismatch.
	Dialect Dialect
	// Placeholder overrides the dialect's placeholder style.
	Placeholder Placeholder
	// Codes reads error codes from a driver the engine does not recognise.
	Codes Codes
	// Name prefixes the adapter's own errors, such as "sluicegorm".
	Name string
	// Unwrap is what the adapter's Unwrap returns at the top level, such as
	// the *gorm.DB it was made from. Inside a transaction, Unwrap returns
	// what TxUnwrap maps the transaction's executor to (the executor itself
	// when TxUnwrap is nil).
	Unwrap   any
	TxUnwrap func(Executor) any
	// BindTx turns a transaction handle of the executor's ORM, begun by
	// the caller (a *sql.Tx, a *gorm.DB in a transaction, a bun.Tx, ...),
	// into the [Executor] of that transaction, which must not be a
	// [Beginner]; [Adapter.BindTx] calls it. It refuses a handle of
	// another type (see [NotATx]), and one it can tell is of another
	// database, with an error wrapping core.ErrInvalid. Nil: the adapter
	// cannot bind a caller's transaction (core.ErrUnsupported).
	BindTx func(tx any) (Executor, error)
}
