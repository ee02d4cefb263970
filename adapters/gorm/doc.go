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
// # A thin adapter
//
// The SQL is not written here. The adapter is sluice's SQL engine (package
// sluicesql, github.com/sluice-go/sluice/adapters/sql), the same for every
// adapter, handed gorm's way of running a statement: db.Exec and
// db.Raw(...).Rows(), with ? placeholders that gorm binds for its
// dialect. So gorm's logger, callbacks and plugins see every statement,
// with its arguments. When gorm's Raw and Row chains hold nothing but
// gorm's own default callbacks (no plugin such as otelgorm or dbresolver,
// no callback of yours, no DryRun or DefaultContextTimeout), the adapter
// does what those callbacks would, without building a gorm Statement: the
// statement, in gorm's bind variables, goes to the same connection pool or
// transaction, and gorm's logger is traced exactly as gorm traces it. A
// callback registered later is honoured from the next statement on.
// The engine owns the rest, the same on every ORM:
// statements per dialect (one guarded UPDATE … RETURNING for IncrementOne
// on PostgreSQL and SQLite, a short locking transaction on MySQL and
// MariaDB), savepoints, retries of deadlocks and serialization failures,
// value checks, time binding, and error classes (core.ErrConflict,
// core.ErrContention, core.ErrInvalid). gorm.Config.TranslateError is
// fine: gorm's ErrDuplicatedKey is a conflict too.
//
// New probes the server once: it refuses a dialector that does not match
// the database, and a MySQL connection that reads times in another zone
// than UTC (keep go-sql-driver/mysql's loc at its default, UTC).
//
// # Transactions
//
// The *gorm.DB may be a transaction of yours (db.Begin(), or the tx of
// db.Transaction): every call then runs in it, you commit or roll it back,
// and core.DB.InTx opens a savepoint in it, so an error there undoes only
// what ran inside. On a pool, the adapter begins its own transactions with
// gorm's Begin.
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
