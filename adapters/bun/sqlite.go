package sluicebun

import sluicesql "github.com/sluice-go/sluice/adapters/sql"

// SQLiteOptions are the DSN parameters every sluice adapter uses for
// modernc.org/sqlite (which bun's sqliteshim picks on the common
// platforms): see [sluicesql.SQLiteOptions].
const SQLiteOptions = sluicesql.SQLiteOptions

// SQLiteDSN returns the modernc.org/sqlite DSN of the database file at
// path with [SQLiteOptions]. Open it with
//
//	sqldb, err := sql.Open("sqlite", sluicebun.SQLiteDSN(path)) // import _ "modernc.org/sqlite"
//	db := bun.NewDB(sqldb, sqlitedialect.New())
//
// path must not contain '?' or '#', which URI file names reserve.
func SQLiteDSN(path string) string { return sluicesql.SQLiteDSN(path) }
