package sluiceent

import sluicesql "github.com/sluice-go/sluice/adapters/sql"

// SQLiteOptions are the DSN parameters, for modernc.org/sqlite, that let
// several goroutines and processes write one SQLite database; see
// [sluicesql.SQLiteOptions]. ent's migrations also need the foreign_keys
// pragma they set.
const SQLiteOptions = sluicesql.SQLiteOptions

// SQLiteDSN returns the modernc.org/sqlite DSN of the database file at path
// with [SQLiteOptions]. Open it with database/sql and hand it to ent:
//
//	db, err := sql.Open("sqlite", sluiceent.SQLiteDSN("app.db")) // import _ "modernc.org/sqlite"
//	drv := entsql.OpenDB(dialect.SQLite, db)
//
// path must not contain '?' or '#'.
func SQLiteDSN(path string) string { return sluicesql.SQLiteDSN(path) }
