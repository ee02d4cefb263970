package sqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/gen"
)

// createBackends are the databases CreateTables is tested on.
func createBackends() []backend {
	return []backend{sqliteBackend(), postgresBackend(), mysqlBackend(false)}
}

// empty is one backend with a schema of unique table names and none of
// its tables: what a new program meets. The tables are dropped when the
// test ends.
type empty struct {
	b      backend
	dsn    string
	sqldb  *sql.DB
	schema *core.Schema
}

func newEmpty(t *testing.T, b backend, preset core.Preset) *empty {
	t.Helper()
	dsn := b.dsn(t)
	sqldb := b.open(t, dsn)
	naming := uniqueNaming()
	delete(naming.Tables, adaptertest.CounterModel().Name) // sluice's own tables only
	naming.Preset = preset
	s := core.MustSchema(naming)
	t.Cleanup(func() {
		for _, q := range gen.DropDDL(s, b.gen) {
			if _, err := sqldb.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
		_ = sqldb.Close()
	})
	return &empty{b: b, dsn: dsn, sqldb: sqldb, schema: s}
}

// open returns a core.DB on exec (a pool of the test's database) with
// the test's schema.
func (e *empty) open(t testing.TB, exec sluicesql.Executor) *core.DB {
	t.Helper()
	a, err := sluicesql.New(t.Context(), exec, sluicesql.Options{Dialect: e.b.dialect})
	if err != nil {
		t.Fatal(err)
	}
	db, err := core.New(a, core.WithSchema(e.schema))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// recorder is a pool executor that records the DDL it runs, in and out of
// transactions: what an ORM's logger would see.
type recorder struct {
	sluicesql.Beginner
	mu  sync.Mutex
	ddl []string
}

func (r *recorder) note(q string) {
	if strings.HasPrefix(q, "CREATE") || strings.HasPrefix(q, "ALTER") || strings.HasPrefix(q, "DROP") {
		r.mu.Lock()
		r.ddl = append(r.ddl, q)
		r.mu.Unlock()
	}
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.ddl
	r.ddl = nil
	return out
}

func (r *recorder) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	r.note(q)
	return r.Beginner.Exec(ctx, q, args...)
}

func (r *recorder) Begin(ctx context.Context) (sluicesql.Tx, error) {
	tx, err := r.Beginner.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return recordingTx{tx, r}, nil
}

type recordingTx struct {
	sluicesql.Tx
	r *recorder
}

func (t recordingTx) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	t.r.note(q)
	return t.Tx.Exec(ctx, q, args...)
}

// indexCount returns how many indexes, other than the primary key's,
// table has, and how many tables of that name the database holds.
func (e *empty) indexCount(t *testing.T, table string) (indexes, tables int64) {
	t.Helper()
	var qi, qt string
	switch e.b.dialect {
	case sluicesql.Postgres:
		qi = `SELECT COUNT(*) FROM pg_index WHERE indrelid = to_regclass($1) AND NOT indisprimary`
		qt = `SELECT COUNT(*) FROM pg_class WHERE relname = $1 AND relkind = 'r'`
		table = `"` + table + `"`
	case sluicesql.MySQL:
		qi = `SELECT COUNT(DISTINCT INDEX_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY'`
		qt = `SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`
	default:
		qi = `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name NOT LIKE 'sqlite_autoindex%'`
		qt = `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`
	}
	if err := e.sqldb.QueryRowContext(t.Context(), qi, table).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if e.b.dialect == sluicesql.Postgres {
		table = strings.Trim(table, `"`)
	}
	if err := e.sqldb.QueryRowContext(t.Context(), qt, table).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	return indexes, tables
}

// wantIndexes is how many indexes of its own each table of s has.
func wantIndexes(s *core.Schema) map[string]int64 {
	out := map[string]int64{}
	for _, tb := range s.Tables() {
		for _, c := range tb.Columns {
			if c.Field.Unique || c.Field.Index {
				out[tb.Name]++
			}
		}
	}
	return out
}

// checkCreated asserts that every table of the schema exists once, with
// exactly the indexes gen gives it.
func (e *empty) checkCreated(t *testing.T) {
	t.Helper()
	for name, want := range wantIndexes(e.schema) {
		idx, n := e.indexCount(t, name)
		if n != 1 || idx != want {
			t.Errorf("table %s: %d tables with %d indexes, want 1 with %d", name, n, idx, want)
		}
	}
}

// TestCreateTablesOnEmpty: on an empty database CreateTables creates the
// tables, with Better Auth's names (camelCase, case-sensitive on
// PostgreSQL), through the adapter's executor; the limiter and the key
// table work at once; a second call runs no DDL and keeps the rows.
func TestCreateTablesOnEmpty(t *testing.T) {
	for _, b := range createBackends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			e := newEmpty(t, b, core.BetterAuth)
			rec := &recorder{Beginner: sluicesql.FromDB(e.sqldb)}
			db := e.open(t, rec)
			if err := db.CheckSchema(ctx); !errors.Is(err, core.ErrSchema) {
				t.Fatalf("CheckSchema before CreateTables = %v, want ErrSchema (no table)", err)
			}
			if err := db.CreateTables(ctx); err != nil {
				t.Fatal(err)
			}
			if ddl := rec.take(); len(ddl) == 0 || !strings.Contains(ddl[0], `lastRequest`) {
				t.Errorf("the executor saw DDL %q, want gen's CREATE TABLE with Better Auth's columns", ddl)
			}
			e.checkCreated(t)

			limiter, err := ratelimit.New(ratelimit.Database(db))
			if err != nil {
				t.Fatal(err)
			}
			rule := ratelimit.Rule{Window: time.Minute, Max: 2}
			if d, err := limiter.Consume(ctx, "k", rule); err != nil || !d.Allowed || d.Remaining != 1 {
				t.Fatalf("first request: %+v, %v", d, err)
			}
			if _, err := db.Create(ctx, core.ModelAPIKey, map[string]any{"key": "h", "referenceId": "u",
				"createdAt": time.Now(), "updatedAt": time.Now()}); err != nil {
				t.Fatal(err)
			}

			if err := db.CreateTables(ctx); err != nil {
				t.Fatalf("second CreateTables: %v", err)
			}
			if ddl := rec.take(); len(ddl) != 0 {
				t.Errorf("second CreateTables ran DDL %q, want none", ddl)
			}
			e.checkCreated(t)
			for _, m := range []string{core.ModelRateLimit, core.ModelAPIKey} {
				if n, err := db.Count(ctx, m); n != 1 || err != nil {
					t.Errorf("%s after the second call: %d rows, %v; want the row kept", m, n, err)
				}
			}
			if d, err := limiter.Consume(ctx, "k", rule); err != nil || !d.Allowed || d.Remaining != 0 {
				t.Errorf("second request: %+v, %v; want the counter kept", d, err)
			}
		})
	}
}

// TestCreateTablesConcurrent: processes starting together on an empty
// database (here goroutines, each with a pool of its own) all succeed,
// and each table exists once with its indexes once. On PostgreSQL the
// losers of the race get "duplicate key" from the catalog, which must
// count as success after looking again.
func TestCreateTablesConcurrent(t *testing.T) {
	const n = 8
	// SQLite also with deferred transactions (no _txlock=immediate), as a
	// DSN of the user's may have them: the look at sqlite_master, then the
	// CREATE, upgrades a read lock to a write lock.
	deferred := sqliteBackend()
	deferred.name = "sqlite-deferred"
	deferred.dsn = func(t testing.TB) string { return "file:" + t.TempDir() + "/sluice.db?_pragma=busy_timeout(10000)" }
	for _, b := range append(createBackends(), deferred) {
		t.Run(b.name, func(t *testing.T) {
			for round := range 3 { // each round a new empty schema: more chances to collide
				e := newEmpty(t, b, core.SnakeCase)
				dbs := make([]*core.DB, n)
				for i := range dbs {
					pool := b.open(t, e.dsn)
					t.Cleanup(func() { _ = pool.Close() })
					dbs[i] = e.open(t, sluicesql.FromDB(pool))
				}
				errs := make([]error, n)
				adaptertest.Release(n, func(i int) { errs[i] = dbs[i].CreateTables(t.Context()) })
				for i, err := range errs {
					if err != nil {
						t.Errorf("round %d, process %d: %v", round, i, err)
					}
				}
				e.checkCreated(t)
				limiter, err := ratelimit.New(ratelimit.Database(dbs[0]))
				if err != nil {
					t.Fatal(err)
				}
				if d, err := limiter.Consume(t.Context(), "k", ratelimit.Rule{Window: time.Minute, Max: 1}); err != nil || !d.Allowed {
					t.Errorf("round %d: first request on the new tables: %+v, %v", round, d, err)
				}
			}
		})
	}
}

// TestCreateTablesIncompatible: a table made by other DDL is left as it
// is and reported: a missing column by name, a missing unique index on a
// key with what it protects. Neither is repaired, and the rows stay.
func TestCreateTablesIncompatible(t *testing.T) {
	for _, b := range createBackends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			e := newEmpty(t, b, core.SnakeCase)
			rec := &recorder{Beginner: sluicesql.FromDB(e.sqldb)}
			db := e.open(t, rec)
			if err := db.CreateTables(ctx); err != nil {
				t.Fatal(err)
			}
			keys, _ := e.schema.Table(core.ModelAPIKey)
			limits, _ := e.schema.Table(core.ModelRateLimit)
			q := b.gen.Quote
			mustExec(t, e.sqldb, "ALTER TABLE "+q(keys.Name)+" DROP COLUMN "+q("metadata"))
			rec.take()

			err := db.CreateTables(ctx)
			var ce *core.Error
			if !errors.Is(err, core.ErrSchema) || !errors.As(err, &ce) || ce.Op != "CreateTables" || ce.Model != core.ModelAPIKey {
				t.Fatalf("CreateTables on a table without a column = %v, want ErrSchema from CreateTables on apikey", err)
			}
			for _, want := range []string{`column "metadata"`, keys.Name, "ALTER TABLE"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			if ddl := rec.take(); len(ddl) != 0 {
				t.Errorf("CreateTables ran %q on an existing table, want nothing", ddl)
			}

			// The unique index on the rate-limit key, dropped: reported, not re-created.
			mustExec(t, e.sqldb, "ALTER TABLE "+q(keys.Name)+" ADD COLUMN "+q("metadata")+" TEXT")
			idx := limits.Name + "_key_key"
			drop := "DROP INDEX " + q(idx)
			if b.dialect == sluicesql.MySQL {
				drop += " ON " + q(limits.Name)
			}
			mustExec(t, e.sqldb, drop)
			if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k"}); err != nil {
				t.Fatal(err)
			}
			err = db.CreateTables(ctx)
			if !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), `no unique index on column "key"`) {
				t.Fatalf("CreateTables on a key without its unique index = %v, want ErrSchema naming it", err)
			}
			if ddl := rec.take(); len(ddl) != 0 {
				t.Errorf("CreateTables ran %q on an existing table, want nothing", ddl)
			}
			if n, err := db.Count(ctx, core.ModelRateLimit); n != 1 || err != nil {
				t.Errorf("rows after CreateTables: %d, %v; want the row kept", n, err)
			}
		})
	}
}

// TestCreateTablesMySQLInTransaction: in a caller's transaction on MySQL,
// where CREATE TABLE would commit it, CreateTables refuses to create and
// says why, but succeeds when there is nothing to create.
func TestCreateTablesMySQLInTransaction(t *testing.T) {
	ctx := t.Context()
	b := mysqlBackend(false)
	e := newEmpty(t, b, core.SnakeCase)
	a, err := sluicesql.NewDB(ctx, e.sqldb, b.dialect)
	if err != nil {
		t.Fatal(err)
	}
	inTx := func(fn func(db *core.DB) error) error {
		tx, err := e.sqldb.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		db, err := core.New(a.WithTx(tx), core.WithSchema(e.schema))
		if err != nil {
			t.Fatal(err)
		}
		return fn(db)
	}
	err = inTx(func(db *core.DB) error { return db.CreateTables(ctx) })
	if !errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "outside any transaction") {
		t.Fatalf("CreateTables in a MySQL transaction = %v, want ErrUnsupported saying why", err)
	}
	if idx, n := e.indexCount(t, e.schema.Tables()[0].Name); n != 0 || idx != 0 {
		t.Fatalf("a table was created inside the transaction")
	}
	db, err := core.New(a, core.WithSchema(e.schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	if err := inTx(func(db *core.DB) error { return db.CreateTables(ctx) }); err != nil {
		t.Errorf("CreateTables in a transaction with every table there = %v, want nil", err)
	}
}

// TestCreateTablesInTransaction: on PostgreSQL and SQLite, CreateTables
// joins a caller's transaction (a savepoint): rolled back, the tables go
// with it.
func TestCreateTablesInTransaction(t *testing.T) {
	for _, b := range []backend{sqliteBackend(), postgresBackend()} {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			e := newEmpty(t, b, core.SnakeCase)
			a, err := sluicesql.NewDB(ctx, e.sqldb, b.dialect)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := e.sqldb.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			db, err := core.New(a.WithTx(tx), core.WithSchema(e.schema))
			if err != nil {
				t.Fatal(err)
			}
			if err := db.CreateTables(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := db.Count(ctx, core.ModelRateLimit); n != 0 || err != nil {
				t.Fatalf("in the transaction: %d, %v", n, err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			for name := range wantIndexes(e.schema) {
				if _, n := e.indexCount(t, name); n != 0 {
					t.Errorf("table %s outlived the rolled-back transaction", name)
				}
			}
		})
	}
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), q); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", q, err))
	}
}
