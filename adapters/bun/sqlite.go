package sluicebun

// SQLiteOptions are the DSN parameters that set up a SQLite database for
// concurrent writers, for modernc.org/sqlite (the pure-Go driver that
// registers as "sqlite"; bun's sqliteshim picks it on the common platforms):
//
//   - busy_timeout(10000): a writer that finds the database locked waits up
//     to 10 s instead of failing at once with SQLITE_BUSY;
//   - journal_mode(WAL): readers do not block the writer, nor it them;
//   - foreign_keys(1): SQLite leaves them off by default;
//   - _txlock=immediate: transactions begin with BEGIN IMMEDIATE, taking
//     the write lock up front. A deferred transaction that reads and then
//     writes must upgrade its lock, and that upgrade fails with SQLITE_BUSY
//     without waiting for the busy timeout, which breaks the read-then-write
//     transactions of concurrent callers.
//
// IncrementOne itself is a single statement on SQLite and needs only the
// busy timeout; transactions (core.DB.InTx, the API-key flows) need all.
const SQLiteOptions = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"

// SQLiteDSN returns a modernc.org/sqlite DSN for the database file at path,
// with [SQLiteOptions]. Open it with
//
//	sqldb, err := sql.Open("sqlite", sluicebun.SQLiteDSN(path)) // import _ "modernc.org/sqlite"
//	db := bun.NewDB(sqldb, sqlitedialect.New())
//
// path must not contain '?' or '#', which URI file names reserve.
func SQLiteDSN(path string) string { return "file:" + path + SQLiteOptions }
