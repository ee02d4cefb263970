package enttest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	sluiceent "github.com/sluice-go/sluice/adapters/ent"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
)

// backend is one database the tests run on: how to open a pool on it.
type backend struct {
	name    string
	dialect string      // ent's dialect name
	gen     gen.Dialect // DDL dialect
	driver  string      // database/sql driver name
	dsn     func(t testing.TB) string
}

func sqliteBackend() backend {
	return backend{name: "sqlite", dialect: dialect.SQLite, gen: gen.SQLite, driver: "sqlite",
		dsn: func(t testing.TB) string { return sluicesql.SQLiteDSN(t.TempDir() + "/sluice.db") }}
}

func postgresBackend() backend {
	return backend{name: "postgres", dialect: dialect.Postgres, gen: gen.Postgres, driver: "pgx",
		dsn: adaptertest.PostgresDSN}
}

// mysqlBackend is MySQL/MariaDB with the DSN as given, or with
// clientFoundRows forced on or off (the adapter must not depend on it).
func mysqlBackend(foundRows bool) backend {
	name := "mariadb"
	if foundRows {
		name = "mariadb-foundrows"
	}
	return backend{name: name, dialect: dialect.MySQL, gen: gen.MySQL, driver: "mysql",
		dsn: func(t testing.TB) string {
			cfg, err := mysql.ParseDSN(adaptertest.MySQLDSN(t))
			if err != nil {
				t.Fatalf("parsing %s: %v", adaptertest.EnvMySQL, err)
			}
			cfg.ClientFoundRows = foundRows
			return cfg.FormatDSN()
		}}
}

func allBackends() []backend {
	return []backend{sqliteBackend(), postgresBackend(), mysqlBackend(false), mysqlBackend(true)}
}

// open opens a new, independent pool and wraps it in an ent driver.
func (b backend) open(dsn string) (*entsql.Driver, error) {
	db, err := sql.Open(b.driver, dsn)
	if err != nil {
		return nil, err
	}
	// The servers are shared by several test processes, and the suite
	// opens several pools per test: stay well under max_connections.
	db.SetMaxOpenConns(maxConnsPerPool)
	if b.dialect != dialect.SQLite {
		// Keep them: reopening a PostgreSQL connection costs a fork and
		// a cold catalog cache. SQLite keeps the default 2 idle, as fewer
		// open connections fight less over its one write lock.
		db.SetMaxIdleConns(maxConnsPerPool)
	}
	return entsql.OpenDB(b.dialect, db), nil
}

// maxConnsPerPool bounds each test pool on a server.
const maxConnsPerPool = 8

// harness is the adaptertest.Harness of this adapter on one backend.
type harness struct {
	b      backend
	dsn    string
	mu     sync.Mutex
	drvs   []*entsql.Driver
	schema *core.Schema
}

func (b backend) maker() adaptertest.HarnessMaker {
	return func(ctx context.Context, t *testing.T) (adaptertest.Harness, error) {
		return &harness{b: b, dsn: b.dsn(t)}, nil
	}
}

func (h *harness) pool() (*entsql.Driver, error) {
	drv, err := h.b.open(h.dsn)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.drvs = append(h.drvs, drv)
	h.mu.Unlock()
	return drv, nil
}

func (h *harness) MakeAdapter(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	drv, err := h.pool()
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
		if _, err := drv.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return sluiceent.New(drv)
}

func (h *harness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	drv, err := h.pool()
	if err != nil {
		return nil, err
	}
	return sluiceent.New(drv)
}

func (h *harness) Capabilities() adaptertest.Capabilities {
	return adaptertest.Capabilities{SeveralPools: true}
}

func (h *harness) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.schema != nil && len(h.drvs) > 0 {
		for _, q := range gen.DropDDL(h.schema, h.b.gen) {
			_, _ = h.drvs[0].ExecContext(context.Background(), q)
		}
	}
	for _, d := range h.drvs {
		_ = d.Close()
	}
	h.drvs = nil
}

// env is one backend opened for a focused test: a driver, a schema with
// unique table names, the tables, and a core.DB. Everything is dropped and
// closed when the test ends.
type env struct {
	b      backend
	dsn    string
	drv    *entsql.Driver
	schema *core.Schema
	db     *core.DB
	ctx    context.Context
}

var tableSeq struct {
	sync.Mutex
	n int
}

func newEnv(t *testing.T, b backend) *env {
	t.Helper()
	ctx := t.Context()
	dsn := b.dsn(t)
	drv, err := b.open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close() })
	tableSeq.Lock()
	tableSeq.n++
	tag := fmt.Sprintf("ent%d_%d", tableSeq.n, randTag())
	tableSeq.Unlock()
	naming := core.Naming{Tables: map[string]string{}}
	for _, m := range append(core.BuiltinModels(), adaptertest.CounterModel()) {
		naming.Tables[m.Name] = m.Name + "_" + tag
	}
	s := core.MustSchema(naming, adaptertest.CounterModel())
	stmts, err := gen.DDL(s, b.gen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range gen.DropDDL(s, b.gen) {
			if _, err := drv.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	for _, q := range stmts {
		if _, err := drv.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db, err := sluiceent.Open(drv, core.WithSchema(s))
	if err != nil {
		t.Fatal(err)
	}
	return &env{b: b, dsn: dsn, drv: drv, schema: s, db: db, ctx: ctx}
}

// table returns the physical table of a model.
func (e *env) table(t testing.TB, model string) *driver.Table {
	tb, ok := e.schema.Table(model)
	if !ok {
		t.Fatalf("no model %q", model)
	}
	return tb
}

// forEach runs fn as a subtest on every backend, skipping those whose
// server is not configured.
func forEach(t *testing.T, backends []backend, fn func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, newEnv(t, b)) })
	}
}

func mustNoErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var errTest = errors.New("test rollback")

// randTag distinguishes this process's tables from those of other test
// processes sharing the database server.
func randTag() int64 { return (time.Now().UnixNano()/1000 + int64(os.Getpid())*7919) % 1_000_000 }

// BeginTx begins an ent transaction on the driver behind db, alternately
// handed out as the dialect.Tx that drv.Tx returns and as a generated
// *ent.Tx would hold it (entTx): the handles a caller's handler holds
// (adaptertest.TxHandles).
func (h *harness) BeginTx(ctx context.Context, db *core.DB) (adaptertest.TxHandle, error) {
	drv, ok := db.Adapter().(driver.Unwrapper).Unwrap().(dialect.Driver)
	if !ok {
		return adaptertest.TxHandle{}, errors.New("the adapter does not run on an ent driver")
	}
	tx, err := drv.Tx(ctx)
	if err != nil {
		return adaptertest.TxHandle{}, err
	}
	var handle any = tx
	if txSeq.Add(1)%2 == 0 {
		handle = &entTx{config: config{driver: &txDriver{drv: drv, tx: tx}}}
	}
	return adaptertest.TxHandle{Handle: handle, Commit: tx.Commit, Rollback: tx.Rollback}, nil
}

var txSeq atomic.Int64

// entTx and config are laid out as ent's templates generate ent.Tx and
// its config: the driver the Tx's builders run on is config.driver.
type entTx struct {
	config
	// the generated clients of each schema would follow
}

type config struct {
	driver dialect.Driver
}
