package gormtest_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"

	_ "github.com/go-sql-driver/mysql" // "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // "pgx"
	sluicegorm "github.com/sluice-go/sluice/adapters/gorm"
	"github.com/sluice-go/sluice/adapters/gorm/sqlitegorm"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// backend is one database the tests run on.
type backend struct {
	name    string
	dialect gen.Dialect
	// dsn returns the DSN or skips the test.
	dsn func(t testing.TB) string
}

func backends() []backend {
	return []backend{
		{"SQLite", gen.SQLite, adaptertest.SQLiteDSN},
		{"PostgreSQL", gen.Postgres, adaptertest.PostgresDSN},
		{"MySQL", gen.MySQL, func(t testing.TB) string { return mysqlDSN(t, false) }},
		{"MySQLFoundRows", gen.MySQL, func(t testing.TB) string { return mysqlDSN(t, true) }},
	}
}

// mysqlDSN is SLUICE_MYSQL_DSN with or without clientFoundRows=true, the
// option that makes MySQL report rows matched instead of rows changed.
func mysqlDSN(t testing.TB, foundRows bool) string {
	dsn := adaptertest.MySQLDSN(t)
	if foundRows {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + "clientFoundRows=true"
	}
	return dsn
}

// quiet returns a new gorm config that logs nothing. A new one each time:
// gorm.Open keeps the *gorm.Config it is given and writes the pool, the
// dialector and the callbacks into it, so two Opens sharing one config
// would share those too.
func quiet() *gorm.Config { return &gorm.Config{Logger: logger.Discard} }

// openGorm opens a new, independent connection pool and a *gorm.DB on it.
func openGorm(d gen.Dialect, dsn string) (*gorm.DB, error) {
	switch d {
	case gen.SQLite:
		return sqlitegorm.OpenDSN(dsn, quiet())
	case gen.Postgres:
		pool, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, err
		}
		return gorm.Open(postgres.New(postgres.Config{Conn: pool}), quiet())
	case gen.MySQL:
		pool, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, err
		}
		return gorm.Open(mysql.New(mysql.Config{Conn: pool}), quiet())
	}
	return nil, errors.New("unknown dialect " + string(d))
}

// harness implements adaptertest.Harness on one backend.
type harness struct {
	d      gen.Dialect
	dsn    string
	mu     sync.Mutex
	dbs    []*gorm.DB // dbs[0] made the tables
	schema *core.Schema
}

func (b backend) maker() adaptertest.HarnessMaker {
	return func(ctx context.Context, t *testing.T) (adaptertest.Harness, error) {
		return &harness{d: b.dialect, dsn: b.dsn(t)}, nil
	}
}

// maxConns bounds each pool: the test servers are shared, and a race test
// opens several pools at once.
const maxConns = 8

// sqliteConns bounds each SQLite pool: SQLite has one writer at a time and
// its busy handler polls with growing sleeps, so dozens of connections of
// one pool fighting for the lock can starve one past busy_timeout. Several
// pools still race each other through the busy handler.
const sqliteConns = 8

func (h *harness) open() (*gorm.DB, error) {
	db, err := openGorm(h.d, h.dsn)
	if err != nil {
		return nil, err
	}
	if pool, err := db.DB(); err == nil {
		n := maxConns
		if h.d == gen.SQLite {
			n = sqliteConns
		}
		pool.SetMaxOpenConns(n)
		// database/sql keeps 2 idle connections by default: a race's
		// callers would close and reopen the rest all the time, and a new
		// PostgreSQL backend costs a fork and a cold catalog cache. SQLite
		// keeps the default, as fewer open connections fight less over
		// its one write lock.
		if h.d != gen.SQLite {
			pool.SetMaxIdleConns(n)
		}
	}
	h.mu.Lock()
	h.dbs = append(h.dbs, db)
	h.mu.Unlock()
	return db, nil
}

func (h *harness) MakeAdapter(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	db, err := h.open()
	if err != nil {
		return nil, err
	}
	ddl, err := gen.DDL(s, h.d)
	if err != nil {
		return nil, err
	}
	h.schema = s
	for _, q := range ddl {
		if err := db.WithContext(ctx).Exec(q).Error; err != nil {
			return nil, err
		}
	}
	return sluicegorm.New(db)
}

func (h *harness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	db, err := h.open()
	if err != nil {
		return nil, err
	}
	return sluicegorm.New(db)
}

func (h *harness) Capabilities() adaptertest.Capabilities {
	return adaptertest.Capabilities{SeveralPools: true}
}

func (h *harness) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.dbs) > 0 && h.schema != nil {
		for _, q := range gen.DropDDL(h.schema, h.d) {
			h.dbs[0].Exec(q)
		}
	}
	for _, db := range h.dbs {
		if pool, err := db.DB(); err == nil {
			pool.Close()
		}
	}
	h.dbs = nil
}

// gormOf returns the *gorm.DB behind a fixture's adapter.
func gormOf(t *testing.T, a driver.Adapter) *gorm.DB {
	t.Helper()
	u, ok := a.(driver.Unwrapper)
	if !ok {
		t.Fatalf("%T does not implement driver.Unwrapper", a)
	}
	db, ok := u.Unwrap().(*gorm.DB)
	if !ok {
		t.Fatalf("Unwrap returned %T, want *gorm.DB", u.Unwrap())
	}
	return db
}

// eachBackend runs fn as a subtest on every backend, with a fresh fixture.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend, f *adaptertest.Fixture)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			fn(t, b, adaptertest.NewFixture(t, b.maker()))
		})
	}
}

func TestConformance(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { adaptertest.Run(t, b.maker()) })
	}
}

// BeginTx begins a gorm transaction on the *gorm.DB behind db: the tx a
// caller's handler holds (adaptertest.TxHandles).
func (h *harness) BeginTx(ctx context.Context, db *core.DB) (adaptertest.TxHandle, error) {
	g, ok := db.Adapter().(driver.Unwrapper).Unwrap().(*gorm.DB)
	if !ok {
		return adaptertest.TxHandle{}, errors.New("the adapter does not run on a *gorm.DB")
	}
	tx := g.WithContext(ctx).Begin()
	if tx.Error != nil {
		return adaptertest.TxHandle{}, tx.Error
	}
	return adaptertest.TxHandle{Handle: tx, Commit: func() error { return tx.Commit().Error }, Rollback: func() error { return tx.Rollback().Error }}, nil
}
