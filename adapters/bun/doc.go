// Package sluicebun is sluice's adapter for bun (github.com/uptrace/bun),
// on PostgreSQL (pgdialect, over pgx's database/sql driver), MySQL and
// MariaDB (mysqldialect, over github.com/go-sql-driver/mysql) and SQLite
// (sqlitedialect, over the pure-Go modernc.org/sqlite).
//
// # Use
//
// Wrap the bun.DB your application already has:
//
//	db, err := sluicebun.Open(bunDB, core.WithNaming(core.Naming{Preset: core.BetterAuth}))
//
// [Open] returns a [core.DB], which the rate limiter and the API-key manager
// take. [New] returns the adapter itself, a [sluicesql.Adapter]; its Unwrap
// method gives the bun.IDB back (inside a transaction, the bun.Tx).
// core.DB.CreateTables creates sluice's tables where they are missing;
// programs that manage their schema with migrations use the DDL sluicegen
// writes instead. On SQLite open the file with sluicesql.SQLiteDSN (with a
// plain DSN the engine switches the file to WAL and waits for a busy
// database itself, but transactions bun begins stay deferred).
//
// # A thin adapter
//
// The SQL itself (statements, the guarded IncrementOne of each dialect, the
// MySQL locking path, savepoints, time binding, value checks, error
// classes and retries) is sluice's one SQL engine, [sluicesql]; this package
// only hands it bun's way of running a statement. Every statement runs
// through the bun.IDB's ExecContext and QueryContext, and transactions
// through its BeginTx, Commit and Rollback, so bun's query hooks (bundebug,
// bunotel, your own) see all of them (on PostgreSQL without hooks, see
// below).
//
// bun writes each argument into the statement text as a literal rather than
// sending it to the driver. So that what is stored is exactly what sluice
// was given:
//
//   - strings that are not valid UTF-8 or that contain NUL (which bun would
//     rewrite as U+FFFD, or drop) are refused with [core.ErrInvalid] before
//     any I/O; core.DB refuses them first anyway;
//   - [New] reads a string with a quote and a backslash back through bun
//     and refuses a session whose quoting differs from bun's (MySQL's
//     NO_BACKSLASH_ESCAPES, PostgreSQL's standard_conforming_strings off);
//   - [New] refuses mysqldialect.WithTimeLocation with another zone than
//     UTC. The engine hands times to MySQL and SQLite as UTC text already,
//     and to PostgreSQL as UTC times, which bun writes with a +00:00
//     offset.
//
// # Transactions
//
// An adapter may be built on a bun.Tx, to run sluice's calls inside a
// transaction the caller began: its writes commit or roll back with it,
// sluice never ends it, and a nested core.DB.InTx (or
// [sluicesql.Adapter.Transaction]) opens a savepoint, so an error from its
// function undoes that function's writes and nothing else. An adapter from
// New can also be bound later to a transaction of the caller, without
// probing the server again:
//
//	inTx := adapter.WithExecutor(sluicebun.Executor(tx))
//
// On a *bun.DB or a bun.Conn the engine begins its own transactions.
//
// # PostgreSQL: bind parameters when no hook is watching
//
// Because bun inlines values, PostgreSQL would parse and plan every
// statement anew, a third of its work on a rate-limit decision. So on a
// PostgreSQL *bun.DB with no query hooks, the engine runs its statements on
// the *sql.DB under bun, with bind parameters: the same driver and pool,
// and pgx's default statement cache keeps their plans (with
// default_query_exec_mode=exec it cannot). Only bun's query counter
// (DBStats) misses them. The check is made on every statement, so a hook
// added later, even after New, sees every statement from then on, with
// bun's literals; a bun.Tx or bun.Conn always runs through bun.
//
// With hooks, each statement's text differs from call to call, and pgx's
// default query mode prepares every distinct text first, an extra round
// trip; add default_query_exec_mode=exec to the DSN then.
//
// # SQLite and concurrent writers
//
// Open SQLite with [SQLiteDSN] (or add [SQLiteOptions] to your own DSN):
// a busy timeout, WAL, and transactions that take the write lock when they
// begin. Import modernc.org/sqlite (bun's sqliteshim chooses it on the usual
// platforms): it is the one SQLite driver all of sluice's adapters use, so
// they can share a program; two drivers registering the name "sqlite" make
// a program panic at start.
package sluicebun
