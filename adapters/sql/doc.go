// Package sluicesql is sluice's one SQL engine, and the adapter for users
// of plain database/sql with any driver.
//
// It owns, once, everything sluice knows about SQL: the dialects
// (PostgreSQL, MySQL/MariaDB, SQLite), whose differences are traits
// declared in one table (dialect.go) and whose servers' features are
// learned at open (probe.go); the DDL of sluice's tables (package ddl,
// which sluicegen also writes); identifier quoting; statement building and caching;
// CRUD; the native guarded IncrementOne of each dialect; savepoints for
// nested transactions; time binding; value checks (an increment that would
// overflow int64 is an error on every dialect, never a wrapped or REAL
// value); and error classes (errors.go, the one place that decides them):
// a unique violation is core.ErrConflict, a deadlock, serialization
// failure or busy database is retried where the operation is safe to
// repeat and is core.ErrContention otherwise, a value the database refuses
// is core.ErrInvalid.
//
// A failure to reach or use the database is classed by what happened, at
// open and at every call: core.ErrUnavailable when it cannot be reached or
// is not serving (connection refused, reset or timed out; PostgreSQL's
// connection exceptions, shutdown, cannot_connect_now, too many
// connections; MySQL's too many connections, server shutdown, and
// Galera's 1047 "WSREP has not yet prepared node" and 1180 "not connected
// to Primary Component"; SQLite's cannot open), core.ErrAuth when it
// refuses the credentials (PostgreSQL 28000/28P01, MySQL 1044/1045/1698),
// and core.ErrWrongDatabase when a server of another family answers (a
// MySQL pool opened as Postgres, a file that is not an SQLite database).
// Any other failure at open, such as a DSN the driver cannot parse, is the
// driver's error without a class. A limiter takes ErrUnavailable and
// ErrAuth through its failure policy, like any storage failure.
//
// The ORM adapters (gorm, bun, ent) and the pgx adapter are executors: they
// hand the engine their way to run a statement and a transaction
// ([Executor], [Beginner], [Tx]), so that the ORM's hooks and logger see
// every statement and a caller's own transaction is joined. The engine
// imports no database driver: it reads error codes through small
// interfaces (see [Codes]).
//
// With database/sql:
//
//	db, err := sql.Open("pgx", dsn)
//	sdb, err := sluicesql.Open(db, sluicesql.Postgres)
//	err = sdb.CreateTables(ctx) // sluice's tables, unless they exist
//	limiter, err := ratelimit.New(ratelimit.Database(sdb))
//
// # SQLite
//
// sluicesql.SQLiteDSN gives the DSN options that let several goroutines
// and processes write one file. A plain DSN behaves the same on a pool
// opened with [Open] or [NewDB]: the engine switches the file to WAL, waits
// for a busy database itself when the DSN sets no busy timeout, and begins
// its transactions with BEGIN IMMEDIATE on a connection whose busy timeout
// it sets.
//
// # Creating the tables
//
// core.DB.CreateTables, on every adapter built on this engine (gorm, bun,
// ent, pgx and database/sql), creates the tables of the DB's schema that
// are missing, with their indexes, from the same DDL sluicegen writes, and
// with the schema's physical names (core.WithNaming, such as Better
// Auth's). It is idempotent and non-destructive, so a program can call it
// at every start: an existing table is never altered or dropped, and keeps
// its rows; several processes starting at once all succeed. On PostgreSQL
// and SQLite the missing tables are created in one transaction; on MySQL
// and MariaDB, whose DDL commits at once, each is one CREATE TABLE IF NOT
// EXISTS holding its unique key, and CreateTables refuses to create inside
// a transaction of the caller's, which it would commit.
//
// A table that exists but does not fit, made by other DDL or an older
// schema, is not repaired: CreateTables then fails with core.ErrSchema,
// naming the missing column or unique index and the fix (sluicegen -dsn
// writes the ALTER TABLE or CREATE INDEX). Creating a unique index on a
// table in use would lock it and fail on duplicate keys, a decision that
// belongs to a migration. Programs that manage their schema with
// migrations can skip CreateTables and use sluicegen's files instead.
package sluicesql
