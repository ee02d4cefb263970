// Package sluiceent is the sluice adapter for ent (entgo.io/ent), on
// PostgreSQL, MySQL/MariaDB and SQLite.
//
// It works on the ent dialect.Driver that also serves the generated client,
// so no generated code is involved and the tables can be ent's own:
//
//	db, _ := sql.Open("pgx", dsn)                   // import _ "github.com/jackc/pgx/v5/stdlib"
//	drv := entsql.OpenDB(dialect.Postgres, db)      // entsql "entgo.io/ent/dialect/sql"
//	client := ent.NewClient(ent.Driver(drv))        // your generated client, if any
//	sdb, err := sluiceent.Open(drv, core.WithNaming(core.Naming{Preset: core.BetterAuth}))
//
// IncrementOne is native on every dialect (see [Adapter.IncrementOne]):
// one guarded UPDATE … RETURNING on PostgreSQL and SQLite, a short locking
// transaction on MySQL and MariaDB, which have no UPDATE … RETURNING.
//
// To run sluice inside a transaction of your own, start it on the driver
// (tx, err := drv.Tx(ctx)) and bind an adapter to it with [Adapter.WithTx]
// or [NewTx]; its Transaction then runs on that transaction instead of
// nesting. [Adapter.Unwrap] returns the driver or transaction.
//
// The adapter imports no database driver. For SQLite use modernc.org/sqlite
// with the DSN options in [SQLiteOptions] (see [SQLiteDSN]), which concurrent
// writers need. Times are stored as UTC timestamps on PostgreSQL and MySQL
// (keep go-sql-driver's default loc=UTC; parseTime may be on or off) and as
// core.FormatTime text on SQLite; unique-key violations of every driver
// satisfy errors.Is(err, core.ErrConflict).
//
// Performance: IncrementOne's statement text is cached per request shape,
// so a steady stream of rate-limit checks costs the driver call and little
// else; BenchmarkIncrementOne compares it with hand-written database/sql.
package sluiceent
