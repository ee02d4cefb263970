package sqltest_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
)

// backend is one database the tests run on: how to open a pool on it.
type backend struct {
	name    string
	dialect sluicesql.Dialect
	gen     gen.Dialect
	driver  string // database/sql driver name
	dsn     func(t testing.TB) string
}

func sqliteBackend() backend {
	return backend{name: "sqlite", dialect: sluicesql.SQLite, gen: gen.SQLite, driver: "sqlite",
		dsn: func(t testing.TB) string { return sluicesql.SQLiteDSN(t.TempDir() + "/sluice.db") }}
}

func postgresBackend() backend {
	return backend{name: "postgres", dialect: sluicesql.Postgres, gen: gen.Postgres, driver: "pgx",
		dsn: adaptertest.PostgresDSN}
}

// mysqlBackend is MySQL/MariaDB with clientFoundRows forced off or on
// (the engine must not depend on it).
func mysqlBackend(foundRows bool) backend {
	name := "mariadb"
	if foundRows {
		name = "mariadb-foundrows"
	}
	return backend{name: name, dialect: sluicesql.MySQL, gen: gen.MySQL, driver: "mysql",
		dsn: func(t testing.TB) string { return mysqlDSN(t, func(c *mysql.Config) { c.ClientFoundRows = foundRows }) }}
}

// mysqlDSN returns the configured MySQL DSN changed by edit.
func mysqlDSN(t testing.TB, edit func(*mysql.Config)) string {
	cfg, err := mysql.ParseDSN(adaptertest.MySQLDSN(t))
	if err != nil {
		t.Fatalf("parsing %s: %v", adaptertest.EnvMySQL, err)
	}
	edit(cfg)
	return cfg.FormatDSN()
}

func allBackends() []backend {
	return []backend{sqliteBackend(), postgresBackend(), mysqlBackend(false), mysqlBackend(true)}
}

// maxConnsPerPool bounds each test pool on a shared server.
const maxConnsPerPool = 8

func (b backend) open(t testing.TB, dsn string) *sql.DB {
	db, err := sql.Open(b.driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(maxConnsPerPool)
	if b.dialect != sluicesql.SQLite {
		// Keep them: reopening a PostgreSQL connection costs a fork and
		// a cold catalog cache. SQLite keeps the default 2 idle, as fewer
		// open connections fight less over its one write lock.
		db.SetMaxIdleConns(maxConnsPerPool)
	}
	return db
}

// harness is the adaptertest.Harness of database/sql on one backend.
type harness struct {
	t      *testing.T
	b      backend
	dsn    string
	mu     sync.Mutex
	dbs    []*sql.DB
	schema *core.Schema
}

func (b backend) maker() adaptertest.HarnessMaker {
	return func(ctx context.Context, t *testing.T) (adaptertest.Harness, error) {
		return &harness{t: t, b: b, dsn: b.dsn(t)}, nil
	}
}

func (h *harness) pool(ctx context.Context) (*sluicesql.Adapter, *sql.DB, error) {
	db := h.b.open(h.t, h.dsn)
	h.mu.Lock()
	h.dbs = append(h.dbs, db)
	h.mu.Unlock()
	a, err := sluicesql.NewDB(ctx, db, h.b.dialect)
	return a, db, err
}

func (h *harness) MakeAdapter(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	a, db, err := h.pool(ctx)
	if err != nil {
		return nil, err
	}
	stmts, err := gen.DDL(s, h.b.gen)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.schema = s
	h.mu.Unlock()
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return a, nil
}

func (h *harness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	a, _, err := h.pool(ctx)
	return a, err
}

func (h *harness) Capabilities() adaptertest.Capabilities {
	return adaptertest.Capabilities{SeveralPools: true}
}

func (h *harness) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.schema != nil && len(h.dbs) > 0 {
		for _, q := range gen.DropDDL(h.schema, h.b.gen) {
			_, _ = h.dbs[0].ExecContext(context.Background(), q)
		}
	}
	for _, d := range h.dbs {
		_ = d.Close()
	}
	h.dbs = nil
}

// env is one backend opened for a focused test: a pool, a schema with
// unique table names, the tables and a core.DB, dropped and closed when
// the test ends.
type env struct {
	b      backend
	dsn    string
	sqldb  *sql.DB
	a      *sluicesql.Adapter
	schema *core.Schema
	db     *core.DB
	ctx    context.Context
}

var tableSeq atomic.Int64

// uniqueNaming gives every model a table name no other test uses.
func uniqueNaming() core.Naming {
	tag := fmt.Sprintf("sq%d_%d", tableSeq.Add(1), (time.Now().UnixNano()/1000+int64(os.Getpid())*7919)%1_000_000)
	naming := core.Naming{Tables: map[string]string{}}
	for _, m := range append(core.BuiltinModels(), adaptertest.CounterModel()) {
		naming.Tables[m.Name] = m.Name + "_" + tag
	}
	return naming
}

func newEnv(t testing.TB, b backend) *env {
	t.Helper()
	ctx := t.Context()
	dsn := b.dsn(t)
	sqldb := b.open(t, dsn)
	t.Cleanup(func() { _ = sqldb.Close() })
	s := core.MustSchema(uniqueNaming(), adaptertest.CounterModel())
	stmts, err := gen.DDL(s, b.gen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range gen.DropDDL(s, b.gen) {
			if _, err := sqldb.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	for _, q := range stmts {
		if _, err := sqldb.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	a, err := sluicesql.NewDB(ctx, sqldb, b.dialect)
	if err != nil {
		t.Fatal(err)
	}
	db, err := core.New(a, core.WithSchema(s))
	if err != nil {
		t.Fatal(err)
	}
	return &env{b: b, dsn: dsn, sqldb: sqldb, a: a, schema: s, db: db, ctx: ctx}
}

func (e *env) table(t testing.TB, model string) *driver.Table {
	tb, ok := e.schema.Table(model)
	if !ok {
		t.Fatalf("no model %q", model)
	}
	return tb
}

// forEach runs fn as a subtest on every backend.
func forEach(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, b := range allBackends() {
		t.Run(b.name, func(t *testing.T) { fn(t, newEnv(t, b)) })
	}
}

// BeginTx begins a database/sql transaction on db's pool: the *sql.Tx a
// caller of sluice holds (adaptertest.TxHandles).
func (h *harness) BeginTx(ctx context.Context, db *core.DB) (adaptertest.TxHandle, error) {
	return beginSQLTx(ctx, db)
}

// beginSQLTx begins a *sql.Tx on the *sql.DB behind db.
func beginSQLTx(ctx context.Context, db *core.DB) (adaptertest.TxHandle, error) {
	pool, ok := db.Adapter().(driver.Unwrapper).Unwrap().(*sql.DB)
	if !ok {
		return adaptertest.TxHandle{}, fmt.Errorf("the adapter runs on %T, not a *sql.DB", db.Adapter().(driver.Unwrapper).Unwrap())
	}
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return adaptertest.TxHandle{}, err
	}
	return adaptertest.TxHandle{Handle: tx, Commit: tx.Commit, Rollback: tx.Rollback}, nil
}
