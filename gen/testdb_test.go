package gen

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/sluice-go/sluice/core"
)

// testDB is one database the DDL and diff tests run on.
type testDB struct {
	dialect Dialect
	driver  string
	dsn     string
}

// testDBs returns SQLite (always) and PostgreSQL and MariaDB/MySQL when
// their environment variables are set; with CI=true a missing one fails.
func testDBs(t *testing.T) []testDB {
	t.Helper()
	dbs := []testDB{{SQLite, "sqlite", "file:" + filepath.Join(t.TempDir(), "gen.db") + "?_pragma=busy_timeout(5000)"}}
	for _, e := range []struct {
		env     string
		dialect Dialect
		driver  string
	}{{"SLUICE_POSTGRES_DSN", Postgres, "pgx"}, {"SLUICE_MYSQL_DSN", MySQL, "mysql"}} {
		dsn := os.Getenv(e.env)
		if dsn == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not set (CI=true requires every database)", e.env)
			}
			t.Logf("%s not set: skipping %s", e.env, e.dialect)
			continue
		}
		dbs = append(dbs, testDB{e.dialect, e.driver, dsn})
	}
	return dbs
}

func (tdb testDB) open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open(tdb.driver, tdb.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.PingContext(context.Background()); err != nil {
		t.Fatalf("%s: %v", tdb.dialect, err)
	}
	return db
}

// uniqueNaming returns naming with table names no other test, or other
// helper sharing the server, uses.
func uniqueNaming(t *testing.T, naming core.Naming) core.Naming {
	t.Helper()
	suffix := uniqueSuffix(t)
	naming.Tables = map[string]string{
		core.ModelRateLimit: "gen_rl_" + suffix,
		core.ModelAPIKey:    "gen_ak_" + suffix,
	}
	return naming
}

// uniqueSuffix returns 8 random hex digits, for names no other test, or
// other helper sharing the server, uses.
func uniqueSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// sqlExecer is what insertRow needs of a *sql.DB.
type sqlExecer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// exec runs statements, failing the test on the first error.
func exec(t *testing.T, db *sql.DB, stmts []string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
}

// dropAfter drops the tables of s when the test ends.
func dropAfter(t *testing.T, db *sql.DB, s *core.Schema, d Dialect) {
	t.Cleanup(func() {
		for _, q := range DropDDL(s, d) {
			if _, err := db.ExecContext(context.Background(), q); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
}
