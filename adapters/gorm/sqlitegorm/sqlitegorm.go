// Package sqlitegorm opens a *gorm.DB on SQLite set up for concurrent
// writers, over the pure-Go modernc.org/sqlite driver (no cgo).
//
// It is a separate package so that programs using sluicegorm on PostgreSQL
// or MySQL do not compile an SQLite engine.
//
// Why the options matter: SQLite runs one writer at a time. Without a busy
// timeout a second writer fails at once with SQLITE_BUSY; and a transaction
// that reads and then writes (BEGIN DEFERRED) fails with SQLITE_BUSY on its
// lock upgrade even with a busy timeout, because SQLite does not wait there.
// [Options] sets busy_timeout, WAL and _txlock=immediate, so that writers
// wait their turn and every transaction takes the write lock at BEGIN.
//
// Only modernc.org/sqlite registers the database/sql driver name "sqlite"
// here; gorm.io/driver/sqlite is used for its dialector alone, on the
// already open pool, so that sluice's gorm, bun and ent adapters can share
// one SQLite driver in one program.
package sqlitegorm

import (
	"database/sql"
	"fmt"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	_ "modernc.org/sqlite" // registers "sqlite"
)

// Options are the DSN parameters for concurrent writers: wait up to 10 s for
// the write lock, write-ahead logging (readers do not block the writer),
// foreign keys on, and BEGIN IMMEDIATE for every transaction. They are
// sluicesql.SQLiteOptions, the same for every sluice adapter.
const Options = sluicesql.SQLiteOptions

// DSN returns the modernc.org/sqlite DSN of the database file at path with
// [Options].
func DSN(path string) string { return sluicesql.SQLiteDSN(path) }

// Open opens the database file at path (created if missing) with [Options]
// and returns a *gorm.DB on it. cfg is as for [OpenDSN]. Close it with
// db.DB() and Close.
func Open(path string, cfg *gorm.Config) (*gorm.DB, error) {
	return OpenDSN(DSN(path), cfg)
}

// OpenDSN opens a modernc.org/sqlite DSN (driver name "sqlite") and returns a
// *gorm.DB on it. Use [DSN] or [Options] unless you know the database has a
// single writer. cfg may be nil; like gorm.Open, OpenDSN keeps cfg and
// fills it in (pool, dialector, callbacks), so give each call its own.
func OpenDSN(dsn string, cfg *gorm.Config) (*gorm.DB, error) {
	pool, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitegorm: %w", err)
	}
	if cfg == nil {
		cfg = &gorm.Config{}
	}
	db, err := gorm.Open(sqlite.Dialector{DriverName: "sqlite", Conn: pool}, cfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqlitegorm: %w", err)
	}
	return db, nil
}
