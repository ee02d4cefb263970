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
// here, so that sluice's gorm, bun and ent adapters share one SQLite driver
// in one program (two registrations of "sqlite" panic). gorm's dialect for
// it comes from github.com/libtnb/sqlite, a pure-Go port of
// gorm.io/driver/sqlite onto modernc.org/sqlite: gorm.io/driver/sqlite
// itself imports github.com/mattn/go-sqlite3, which needs cgo and a C
// compiler. [Dialector] hands it an already open pool.
//
// libtnb/sqlite's init turns on three process-wide modernc.org/sqlite
// switches (StrictPragmas, OFDLocking, Fdatasync) that are off upstream.
// This package turns them back off in its own init, so that linking the
// gorm adapter does not change how the bun and ent adapters' SQLite
// behaves in the same program; a program that wants them calls them from
// main (see modernc.org/sqlite), after every package init has run.
package sqlitegorm

import (
	"database/sql"
	"fmt"
	"os"

	"github.com/libtnb/sqlite"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"gorm.io/gorm"
	moderncsqlite "modernc.org/sqlite" // registers "sqlite"
)

// init undoes libtnb/sqlite's init, which has run before it (this package
// imports that one): modernc.org/sqlite's upstream defaults stay in force,
// as they were when gorm.io/driver/sqlite's dialector was used here.
// OFD locking is left alone when MODERNC_SQLITE_OFD_LOCK is set, because
// modernc.org/sqlite then takes its setting from there and libtnb/sqlite did
// not touch it. No connection is open yet, so none of the calls can fail
// for being late; where a switch is unavailable it is off already.
func init() {
	moderncsqlite.StrictPragmas(false)
	if _, ok := os.LookupEnv("MODERNC_SQLITE_OFD_LOCK"); !ok {
		_, _ = moderncsqlite.OFDLocking(false)
	}
	_, _ = moderncsqlite.Fdatasync(false)
}

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

// Dialector returns gorm's SQLite dialector on pool, a *sql.DB already
// opened with modernc.org/sqlite (driver name "sqlite"): pass it to
// gorm.Open. It opens no connection of its own and registers no driver, so
// a program can share pool, or at least the one SQLite driver, with bun and
// ent. Prefer [Open] or [OpenDSN] unless the pool is opened elsewhere; open
// it with [Options] for concurrent writers.
//
// Its error translation knows modernc.org/sqlite's errors (gorm.io/driver/sqlite
// knew only mattn's): with gorm.Config.TranslateError, a unique or
// primary key violation is gorm.ErrDuplicatedKey and a foreign key one
// gorm.ErrForeignKeyViolated.
func Dialector(pool *sql.DB) gorm.Dialector {
	return sqlite.New(sqlite.Config{DriverName: "sqlite", Conn: pool})
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
	db, err := gorm.Open(Dialector(pool), cfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqlitegorm: %w", err)
	}
	return db, nil
}
