package sluicesql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"strconv"
	"strings"
	"time"
)

// SQLiteOptions are the DSN parameters, for modernc.org/sqlite, that let
// several goroutines and processes write one SQLite database: a busy
// timeout (otherwise a second writer fails at once with SQLITE_BUSY), WAL
// journaling (readers do not block the writer), foreign keys, and
// _txlock=immediate, so that a transaction takes the write lock at BEGIN:
// a deferred transaction that reads and then writes fails its lock upgrade
// with SQLITE_BUSY without waiting for the timeout.
//
// A plain DSN works too: the engine does the same itself (see [NewDB]).
const SQLiteOptions = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"

// SQLiteDSN returns the modernc.org/sqlite DSN of the database file at path
// with [SQLiteOptions]:
//
//	db, err := sql.Open("sqlite", sluicesql.SQLiteDSN("app.db")) // import _ "modernc.org/sqlite"
//
// path must not contain '?' or '#'.
func SQLiteDSN(path string) string { return "file:" + path + SQLiteOptions }

// sqliteBusyWait is how long the engine waits for a busy SQLite database
// when the connection sets no busy timeout of its own: SQLiteOptions'.
const sqliteBusyWait = 10 * time.Second

// probeSQLite makes a database opened with a plain DSN behave as one with
// SQLiteOptions. The busy timeout is per connection and the DSN's to set:
// when the probe's connection has none, the engine waits for a busy
// database itself, retrying a statement that found it locked (which took
// no effect) for up to sqliteBusyWait, and sets the timeout on each
// connection a transaction of NewDB's pool runs on. The journal mode is
// the file's, kept across connections and processes: a file in a
// rollback-journal mode is switched to WAL once, here, so that readers
// never wait for the writer nor make it wait. A database in memory, or a
// file that cannot take WAL, keeps its mode.
func (a *Adapter) probeSQLite(ctx context.Context) {
	if n, err := a.scalar(ctx, "PRAGMA busy_timeout", nil); err == nil && n == 0 {
		a.e.busyWait = sqliteBusyWait
	}
	rec, err := retried(a, ctx, func() (map[string]any, error) { return a.queryOne(ctx, "PRAGMA journal_mode", nil) })
	if err != nil {
		return
	}
	switch strings.ToLower(text(rec["journal_mode"])) {
	case "delete", "truncate", "persist":
		_, _ = retried(a, ctx, func() (map[string]any, error) { return a.queryOne(ctx, "PRAGMA journal_mode = WAL", nil) })
	}
}

// sqliteDB is NewDB's Beginner of a database/sql pool on SQLite. Each of
// its transactions runs on one connection of the pool, which gets the
// busy timeout when the DSN set none, and begins with BEGIN IMMEDIATE,
// whatever the DSN's _txlock: a deferred transaction that reads and then
// writes fails its lock upgrade with SQLITE_BUSY at once, without waiting.
type sqliteDB struct {
	sqlExec
	b          *sql.DB
	busyPragma string // "PRAGMA busy_timeout = …", or "" when the DSN sets one
}

func (d *sqliteDB) Begin(ctx context.Context) (Tx, error) {
	c, err := d.b.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if d.busyPragma != "" {
		if _, err := c.ExecContext(ctx, d.busyPragma); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		_ = c.Close()
		return nil, err
	}
	return sqliteTx{sqlExec{c}, c}, nil
}

// setBusyTimeout makes the pool's transactions set the busy timeout.
func (d *sqliteDB) setBusyTimeout(wait time.Duration) {
	d.busyPragma = "PRAGMA busy_timeout = " + strconv.FormatInt(wait.Milliseconds(), 10)
}

// sqliteTx is a transaction of sqliteDB: its statements run on its
// connection, which goes back to the pool when it ends.
type sqliteTx struct {
	sqlExec
	c *sql.Conn
}

// Commit commits; when COMMIT fails (busy, or the context ended) the
// transaction is rolled back, so that its connection goes back to the pool
// outside any transaction.
func (t sqliteTx) Commit(ctx context.Context) error {
	if _, err := t.c.ExecContext(ctx, "COMMIT"); err != nil {
		t.end()
		return err
	}
	return t.c.Close()
}

func (t sqliteTx) Rollback(context.Context) error {
	t.end()
	return nil
}

// end rolls back and returns the connection to the pool, or closes it
// when the rollback fails for another reason than no transaction being
// open: a connection that may still be in a transaction is never reused.
func (t sqliteTx) end() {
	if _, err := t.c.ExecContext(context.Background(), "ROLLBACK"); err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		_ = t.c.Raw(func(any) error { return sqldriver.ErrBadConn })
	}
	_ = t.c.Close()
}
