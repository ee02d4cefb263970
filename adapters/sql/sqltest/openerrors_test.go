package sqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// classes are the sentinels an error at open may carry: exactly the one
// of what happened, and never ErrUnsupported, which would make an outage
// look like a programming error.
var classes = []error{core.ErrUnavailable, core.ErrAuth, core.ErrWrongDatabase, core.ErrUnsupported, core.ErrContention}

// checkOpenErr opens driverName on dsn as d and checks that the error is
// of class want alone (nil: no class).
func checkOpenErr(t *testing.T, driverName, dsn string, d sluicesql.Dialect, want error) {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = sluicesql.NewDB(t.Context(), db, d)
	if err == nil {
		t.Fatalf("opened %s", dsn)
	}
	t.Log(err)
	for _, c := range classes {
		if errors.Is(err, c) != (c == want) {
			t.Errorf("err = %v: errors.Is(%v) = %v, want class %v", err, c, errors.Is(err, c), want)
		}
	}
}

// A closed port, a role the server does not know and a DSN the driver
// cannot parse are three different failures on PostgreSQL.
func TestOpenErrorsPostgres(t *testing.T) {
	u, err := url.Parse(adaptertest.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	closed := *u
	closed.Host = "127.0.0.1:1"
	t.Run("refused", func(t *testing.T) {
		checkOpenErr(t, "pgx", closed.String()+"&connect_timeout=5", sluicesql.Postgres, core.ErrUnavailable)
	})
	stranger := *u
	stranger.User = url.UserPassword("sluice_no_such_role", "wrong")
	t.Run("credentials", func(t *testing.T) { checkOpenErr(t, "pgx", stranger.String(), sluicesql.Postgres, core.ErrAuth) })
	t.Run("garbage DSN", func(t *testing.T) { checkOpenErr(t, "pgx", "garbage", sluicesql.Postgres, nil) })
	t.Run("as sqlite", func(t *testing.T) { checkOpenErr(t, "pgx", u.String(), sluicesql.SQLite, core.ErrWrongDatabase) })
	t.Run("as mysql", func(t *testing.T) { checkOpenErr(t, "pgx", u.String(), sluicesql.MySQL, core.ErrWrongDatabase) })
}

// A closed port and a wrong password on MariaDB.
func TestOpenErrorsMySQL(t *testing.T) {
	refused := mysqlDSN(t, func(c *mysql.Config) { c.Addr = "127.0.0.1:1" })
	t.Run("refused", func(t *testing.T) { checkOpenErr(t, "mysql", refused, sluicesql.MySQL, core.ErrUnavailable) })
	wrong := mysqlDSN(t, func(c *mysql.Config) { c.User, c.Passwd = "sluice_no_such_user", "wrong" })
	t.Run("credentials", func(t *testing.T) { checkOpenErr(t, "mysql", wrong, sluicesql.MySQL, core.ErrAuth) })
	t.Run("as postgres", func(t *testing.T) {
		checkOpenErr(t, "mysql", mysqlDSN(t, func(*mysql.Config) {}), sluicesql.Postgres, core.ErrWrongDatabase)
	})
}

// A file that cannot be opened, and one that is not an SQLite database.
func TestOpenErrorsSQLite(t *testing.T) {
	dir := t.TempDir()
	t.Run("cannot open", func(t *testing.T) {
		checkOpenErr(t, "sqlite", filepath.Join(dir, "no such dir", "app.db"), sluicesql.SQLite, core.ErrUnavailable)
	})
	notDB := filepath.Join(dir, "text.db")
	if err := os.WriteFile(notDB, []byte("this is not an SQLite database, only text long enough to fill a header page..........."), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("not a database", func(t *testing.T) { checkOpenErr(t, "sqlite", notDB, sluicesql.SQLite, core.ErrWrongDatabase) })
	t.Run("as postgres", func(t *testing.T) {
		checkOpenErr(t, "sqlite", filepath.Join(dir, "app.db"), sluicesql.Postgres, core.ErrWrongDatabase)
	})
}

// failing runs statements on a pool until fail is set, then answers each
// with that error, as a Galera node leaving the primary component does.
type failing struct {
	sluicesql.Beginner
	fail atomic.Pointer[error]
}

func (f *failing) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if err := f.fail.Load(); err != nil {
		return nil, *err
	}
	return f.Beginner.Exec(ctx, q, args...)
}

func (f *failing) Query(ctx context.Context, q string, args ...any) (sluicesql.Rows, error) {
	if err := f.fail.Load(); err != nil {
		return nil, *err
	}
	return f.Beginner.Query(ctx, q, args...)
}

func (f *failing) Begin(ctx context.Context) (sluicesql.Tx, error) {
	if err := f.fail.Load(); err != nil {
		return nil, *err
	}
	return f.Beginner.Begin(ctx)
}

// A node that stops serving (Galera's 1047 and 1180, too many connections)
// is core.ErrUnavailable at every call, and a limiter takes it through its
// failure policy: denied by default, admitted only with WithFailOpen.
func TestUnavailableNodeGoesThroughFailurePolicy(t *testing.T) {
	b := mysqlBackend(false)
	e := newEmpty(t, b, core.SnakeCase)
	f := &failing{Beginner: sluicesql.FromDB(e.sqldb)}
	db := e.open(t, f)
	if err := db.CreateTables(t.Context()); err != nil {
		t.Fatal(err)
	}
	closed, err := ratelimit.New(ratelimit.Database(db))
	if err != nil {
		t.Fatal(err)
	}
	open, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithFailOpen())
	if err != nil {
		t.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 5}
	if d, err := closed.Consume(t.Context(), "k", rule); err != nil || !d.Allowed {
		t.Fatalf("before the failure: %+v, %v", d, err)
	}
	for _, nodeErr := range []error{
		errors.New("Error 1047 (08S01): WSREP has not yet prepared node for application use"),
		errors.New("Error 1180 (HY000): Got error 6 \"No such device or address\" during COMMIT: Not connected to Primary Component"),
		errors.New("Error 1040 (08004): Too many connections"),
	} {
		f.fail.Store(&nodeErr)
		d, err := closed.Consume(t.Context(), "k", rule)
		if d.Allowed || !errors.Is(err, core.ErrUnavailable) || !errors.Is(err, nodeErr) {
			t.Errorf("%v, default policy: %+v, %v; want a denial with ErrUnavailable", nodeErr, d, err)
		}
		d, err = open.Consume(t.Context(), "k2", rule)
		if !d.Allowed || !errors.Is(err, core.ErrUnavailable) {
			t.Errorf("%v, fail-open policy: %+v, %v; want an admission with ErrUnavailable", nodeErr, d, err)
		}
	}
}
