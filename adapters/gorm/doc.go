// Package sluicegorm is the sluice adapter for gorm: it runs sluice's
// guarded counters, rate limiter and API keys on the *gorm.DB you already
// have, on PostgreSQL, MySQL/MariaDB and SQLite.
//
// # Use
//
//	db, err := sluicegorm.Open(gormDB)          // a *core.DB
//	limiter, err := ratelimit.New(ratelimit.Database(db))
//
// [Open] takes core's options (core.WithNaming for Better Auth's table and
// column names, core.WithSchema, ...). [New] returns the bare [Adapter]
// when you need it, and Adapter.Unwrap gives back the *gorm.DB: inside
// core.DB.InTx, the transaction's, so that your own gorm writes join it.
// The tables come from your migrations; package gen writes their DDL, and
// gorm models, for every dialect.
//
// # Transactions
//
// The *gorm.DB may be a transaction of yours (db.Begin(), or the tx of
// db.Transaction): every call then runs in it, you commit or roll back,
// and core.DB.InTx opens a savepoint. On MySQL, IncrementOne runs directly
// in your transaction instead of opening its own, and its row lock lasts
// until you commit.
//
// # IncrementOne
//
// The adapter implements core.Incrementer natively, with SQL built per
// dialect (identifiers quoted by the gorm dialector: key is reserved on
// MySQL) and run through gorm's Row and Raw callbacks, those of db.Raw and
// db.Exec, so gorm's logger and plugins see every statement. Deltas are
// computed by the database (c = c + ?), so NULL stays NULL. It never uses
// gorm's Updates, which adds updated_at by itself.
//
// PostgreSQL, one statement; a concurrent writer of the chosen row makes
// the locking subquery wait and re-check the guard on the new version:
//
//	UPDATE t SET c = c + $1 WHERE id = (SELECT id FROM t WHERE <guard> ORDER BY id LIMIT 1 FOR UPDATE) AND <guard> RETURNING ...
//
// When the guard has an Eq on the primary key or a unique column (the rate
// limiter's key), the subquery is left out: UPDATE t SET ... WHERE <guard>
// RETURNING ... already changes at most one row.
//
// SQLite, one statement, atomic since SQLite has one writer at a time:
//
//	UPDATE t SET c = c + ? WHERE id = (SELECT id FROM t WHERE <guard> ORDER BY id LIMIT 1) AND <guard> RETURNING ...
//
// MySQL and MariaDB have no UPDATE ... RETURNING (MariaDB 10.11 rejects
// it) and report rows changed, not matched, unless the DSN sets
// clientFoundRows. So one transaction runs SELECT id ... FOR UPDATE (the
// "no match" signal), the guarded UPDATE by id, and SELECT ... WHERE id
// to read the row back; this is correct with and without clientFoundRows.
// UpdateMany likewise locks the matching rows first and reports how many
// it locked and updated.
//
// # Conflicts
//
// Unique-key violations satisfy errors.Is(err, core.ErrConflict) on every
// driver (PostgreSQL 23505, MySQL 1062, SQLite's UNIQUE constraint, gorm's
// ErrDuplicatedKey). On PostgreSQL Create is INSERT ... ON CONFLICT DO
// NOTHING RETURNING, so a duplicate does not abort your transaction.
//
// # Times
//
// Times are bound as UTC time.Time on PostgreSQL (timestamptz) and MySQL
// (DATETIME(3); keep go-sql-driver/mysql's loc at its default, UTC), and on
// SQLite, which has no time type, as the fixed-width text of
// core.FormatTime, whose text order is time order.
//
// # SQLite
//
// SQLite needs a busy timeout and immediate write transactions for
// concurrent writers: package sqlitegorm opens a *gorm.DB on the pure-Go
// modernc.org/sqlite driver with the right DSN (sqlitegorm.Options):
//
//	gormDB, err := sqlitegorm.Open("app.db", &gorm.Config{})
//
// Under heavy write concurrency in one process, also bound the pool
// (a few connections, with sql.DB.SetMaxOpenConns): SQLite's busy handler
// polls with growing sleeps, and dozens of connections fighting for the
// write lock can starve one past the busy timeout.
package sluicegorm
