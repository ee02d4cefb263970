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
// The adapter is thin: sluice's SQL engine ([sluicesql.Adapter], shared by
// every SQL adapter) builds the statements, picks the native IncrementOne
// of each dialect, classifies errors, retries contention and binds times;
// this package only hands it ent's way of running a statement (the
// driver's Exec and Query, which pass the statement to database/sql as it
// is, in the database's own placeholders) and of beginning a transaction
// (the driver's Tx).
// So a dialect.DebugDriver, or any tracing or metrics wrapper around the
// driver, sees every statement sluice runs, its transactions included.
// On ent's own *entsql.Driver, unwrapped, nothing but database/sql would
// see them: there the adapter runs each statement on the driver's
// *sql.DB (or its transaction's *sql.Tx) itself, as the driver would, and
// saves ent's per-statement boxing; a context carrying session variables
// (entsql.WithVar) still goes through the driver, which sets them.
//
// To run sluice inside a transaction of your own, start it on the driver
// (tx, err := drv.Tx(ctx)) and bind an adapter to it with [Adapter.WithTx]
// or [NewTx], or pass [New] the driver of a generated ent.Tx (one that is a
// dialect.Tx): sluice's writes then commit or roll back with yours, and
// [Adapter.Transaction] opens a savepoint, so an error inside it undoes its
// own writes and nothing else. [Adapter.Unwrap] returns the driver or the
// transaction.
//
// The adapter imports no database driver. For SQLite use modernc.org/sqlite
// with the DSN options in [SQLiteOptions] (see [SQLiteDSN]), which concurrent
// writers need. Keep go-sql-driver's default loc=UTC on MySQL: New refuses
// a session that does not read and write times in UTC. Unique-key
// violations of every driver satisfy errors.Is(err, core.ErrConflict).
package sluiceent
