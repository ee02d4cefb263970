// Package sluicesql is sluice's one SQL engine, and the adapter for users
// of plain database/sql with any driver.
//
// It owns, once, everything sluice knows about SQL: the dialects
// (PostgreSQL, MySQL/MariaDB, SQLite) and their features, learned from the
// server at open; identifier quoting; statement building and caching;
// CRUD; the native guarded IncrementOne of each dialect; savepoints for
// nested transactions; time binding; value checks (an increment that would
// overflow int64 is an error on every dialect, never a wrapped or REAL
// value); and error classes: a unique violation is core.ErrConflict, a
// deadlock, serialization failure or busy database is retried where the
// operation is safe to repeat and is core.ErrContention otherwise, a value
// the database refuses is core.ErrInvalid.
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
//	limiter, err := ratelimit.New(ratelimit.Database(sdb))
package sluicesql
