package adaptertest

import (
	"os"
	"path/filepath"
	"testing"
)

// The environment variables that point tests at database servers. Without
// them the tests that need a server skip with a message; with CI=true a
// missing one fails instead.
const (
	EnvPostgres = "SLUICE_POSTGRES_DSN" // e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable
	EnvMySQL    = "SLUICE_MYSQL_DSN"    // e.g. root@tcp(127.0.0.1:3306)/test
	EnvRedis    = "SLUICE_REDIS_ADDR"   // e.g. 127.0.0.1:6379
)

// PostgresDSN returns the PostgreSQL DSN from SLUICE_POSTGRES_DSN, or skips
// the test (fails it when CI=true).
func PostgresDSN(t testing.TB) string { return fromEnv(t, EnvPostgres, "PostgreSQL") }

// MySQLDSN returns the MySQL or MariaDB DSN from SLUICE_MYSQL_DSN, in
// go-sql-driver/mysql form, or skips the test (fails it when CI=true).
func MySQLDSN(t testing.TB) string { return fromEnv(t, EnvMySQL, "MySQL/MariaDB") }

// RedisAddr returns the Redis address from SLUICE_REDIS_ADDR, or skips the
// test (fails it when CI=true).
func RedisAddr(t testing.TB) string { return fromEnv(t, EnvRedis, "Redis") }

func fromEnv(t testing.TB, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: set %s", what, name)
		}
		t.Skipf("%s not configured: set %s to run this test", what, name)
	}
	return v
}

// SQLiteDSN returns a DSN for a fresh SQLite database file in the test's
// temporary directory, set up for concurrent writers: a busy timeout, WAL,
// and write transactions that begin immediately (so a read-then-write
// transaction never fails with SQLITE_BUSY on its lock upgrade). It suits
// modernc.org/sqlite, the pure-Go driver every sluice adapter uses.
func SQLiteDSN(t testing.TB) string {
	t.Helper()
	return "file:" + filepath.Join(t.TempDir(), "sluice.db") + SQLiteOptions
}

// SQLiteOptions are the DSN parameters SQLiteDSN adds to a file name.
const SQLiteOptions = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"
