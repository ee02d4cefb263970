// Package testenv gives the generator's proof tests a database of each
// kind, isolated from everything else on the server: SQLite always,
// PostgreSQL and MariaDB/MySQL when SLUICE_POSTGRES_DSN and
// SLUICE_MYSQL_DSN are set (with CI=true a missing one fails the test),
// and opens each ORM on such a database. It is not internal because the
// module of generated code the proof tests build imports it.
package testenv

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	_ "modernc.org/sqlite"             // the "sqlite" driver

	"github.com/sluice-go/sluice/gen"
)

// Server is one database server to run a test on.
type Server struct {
	Dialect gen.Dialect
	dsn     string
}

// Servers returns SQLite, then each configured server.
func Servers(t testing.TB) []Server {
	t.Helper()
	servers := []Server{{Dialect: gen.SQLite}}
	for _, e := range []struct {
		env string
		d   gen.Dialect
	}{{"SLUICE_POSTGRES_DSN", gen.Postgres}, {"SLUICE_MYSQL_DSN", gen.MySQL}} {
		dsn := os.Getenv(e.env)
		if dsn == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not set (CI=true requires every database)", e.env)
			}
			t.Logf("%s not set: skipping %s", e.env, e.d)
			continue
		}
		servers = append(servers, Server{Dialect: e.d, dsn: dsn})
	}
	return servers
}

// Open returns a connection to an empty database of its own: a new SQLite
// file, a new PostgreSQL schema (as the search_path) or a new MySQL
// database, dropped with its tables when the test ends. Generated code
// uses fixed table names, so this is how tests sharing a server keep
// apart. MySQL connections parse times, in UTC.
func (s Server) Open(t testing.TB) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	switch s.Dialect {
	case gen.SQLite:
		db, err = sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "test.db")+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
	case gen.Postgres:
		name := "gen_proof_" + suffix(t)
		s.admin(t, "pgx", s.dsn, "CREATE SCHEMA "+name, "DROP SCHEMA "+name+" CASCADE")
		u, perr := url.Parse(s.dsn)
		if perr != nil {
			t.Fatal(perr)
		}
		q := u.Query()
		q.Set("search_path", name)
		u.RawQuery = q.Encode()
		db, err = sql.Open("pgx", u.String())
	case gen.MySQL:
		name := "gen_proof_" + suffix(t)
		s.admin(t, "mysql", s.dsn, "CREATE DATABASE "+name, "DROP DATABASE "+name)
		cfg, perr := mysql.ParseDSN(s.dsn)
		if perr != nil {
			t.Fatal(perr)
		}
		cfg.DBName = name
		cfg.ParseTime = true
		db, err = sql.Open("mysql", cfg.FormatDSN())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// admin runs create now and drop when the test ends, on a connection of
// its own (closed after drop).
func (s Server) admin(t testing.TB, driver, dsn, create, drop string) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(create); err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer db.Close()
		if _, err := db.Exec(drop); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

func suffix(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
