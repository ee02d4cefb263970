package sluicesql

// SQLiteOptions are the DSN parameters, for modernc.org/sqlite, that let
// several goroutines and processes write one SQLite database: a busy
// timeout (otherwise a second writer fails at once with SQLITE_BUSY), WAL
// journaling (readers do not block the writer), foreign keys, and
// _txlock=immediate, so that a transaction takes the write lock at BEGIN:
// a deferred transaction that reads and then writes fails its lock upgrade
// with SQLITE_BUSY without waiting for the timeout.
const SQLiteOptions = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"

// SQLiteDSN returns the modernc.org/sqlite DSN of the database file at path
// with [SQLiteOptions]:
//
//	db, err := sql.Open("sqlite", sluicesql.SQLiteDSN("app.db")) // import _ "modernc.org/sqlite"
//
// path must not contain '?' or '#'.
func SQLiteDSN(path string) string { return "file:" + path + SQLiteOptions }
