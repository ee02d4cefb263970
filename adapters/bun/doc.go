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
// take. [New] returns the [Adapter] itself; its Unwrap method gives the
// bun.IDB back. The tables must exist: the gen package writes their DDL for
// each dialect.
//
// An adapter may also be built on a bun.Tx, to run sluice's calls inside a
// transaction the caller began, commits and rolls back: core.DB.InTx then
// runs directly in that transaction instead of opening a new one (so an
// error from its function does not roll anything back by itself; the
// caller's rollback does). On a bun.Conn, calls run on that connection.
//
// # IncrementOne
//
// [Adapter.IncrementOne] is native on every dialect: the guard is checked
// in the same atomic write that applies the deltas (column = column + n, so
// NULL stays NULL), and at most one row changes.
//
//   - PostgreSQL: one UPDATE … WHERE pk = (SELECT pk … WHERE guard ORDER BY
//     pk LIMIT 1 FOR UPDATE) AND guard RETURNING …; a plain UPDATE … WHERE
//     guard RETURNING … when the guard has an equality on the primary key or
//     a unique column.
//   - SQLite: the same statement keyed on rowid, without FOR UPDATE.
//   - MySQL and MariaDB, which have no UPDATE … RETURNING: one transaction
//     of SELECT pk … FOR UPDATE, the guarded UPDATE by primary key, and a
//     SELECT of the row. The answer comes from the locking read, so it is
//     right whether or not the DSN sets clientFoundRows. A transaction that
//     the server picks as a deadlock victim is run again, up to 5 times.
//
// # PostgreSQL: parameters and query hooks
//
// bun writes every value into the SQL text. On PostgreSQL that would make
// every call a statement pgx has never seen, to be parsed and planned
// again (with pgx's default statement cache, also prepared: an extra round
// trip). So on PostgreSQL the adapter builds each statement with bun's query
// builders but with $n parameters in place of the values, and runs it on the
// database/sql handle beneath the bun.IDB; the statement text is then the
// same from call to call and pgx prepares it once per connection. bun's query
// hooks (bundebug, bunotel) do not see these statements; [WithQueryHooks]
// sends them through bun instead, at that cost. MySQL and SQLite statements
// always go through bun.
//
// # Dialect notes
//
//   - Identifiers are always quoted (key is a reserved word on MySQL).
//   - Times are bound in UTC. On SQLite, which has no time type, they are
//     stored as [core.FormatTime] text, whose order is time order. On MySQL
//     leave the driver's loc at UTC (its default); parseTime may be on or
//     off.
//   - A unique-key violation is [core.ErrConflict] on every dialect
//     (PostgreSQL 23505, MySQL 1062, SQLite UNIQUE constraint). On
//     PostgreSQL Create uses INSERT … ON CONFLICT DO NOTHING, so a conflict
//     does not abort the surrounding transaction.
//   - Strings containing a NUL byte are refused with [core.ErrInvalid]:
//     PostgreSQL cannot store them and bun's MySQL dialect would silently
//     drop the byte.
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
