package buntest_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	sluicebun "github.com/sluice-go/sluice/adapters/bun"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"
)

const counter = "counter" // adaptertest.CounterModel's name

// eachTarget runs fn on a fresh fixture of every configured database.
func eachTarget(t *testing.T, fn func(t *testing.T, f *adaptertest.Fixture)) {
	for _, tc := range targets {
		t.Run(tc.name, func(t *testing.T) { fn(t, adaptertest.NewFixture(t, maker(tc.tg))) })
	}
}

func bunDB(t *testing.T, f *adaptertest.Fixture) *bun.DB {
	t.Helper()
	db, ok := f.Adapter.(driver.Unwrapper).Unwrap().(*bun.DB)
	if !ok {
		t.Fatalf("Unwrap returned %T, want *bun.DB", f.Adapter.(driver.Unwrapper).Unwrap())
	}
	return db
}

func table(t *testing.T, f *adaptertest.Fixture, model string) *driver.Table {
	t.Helper()
	tb, ok := f.Schema.Table(model)
	if !ok {
		t.Fatalf("no model %q", model)
	}
	return tb
}

func mustCreate(t *testing.T, f *adaptertest.Fixture, db *core.DB, values map[string]any) core.Row {
	t.Helper()
	row, err := db.Create(f.Ctx, counter, values)
	if err != nil {
		t.Fatalf("Create %v: %v", values, err)
	}
	return row
}

// exists reports whether a counter row named name is visible through db.
func exists(t *testing.T, f *adaptertest.Fixture, db *core.DB, name string) bool {
	t.Helper()
	_, ok, err := db.FindOne(f.Ctx, counter, core.Eq("name", name))
	if err != nil {
		t.Fatalf("FindOne(%q): %v", name, err)
	}
	return ok
}

func TestNewRefusesNil(t *testing.T) {
	if _, err := sluicebun.New(nil); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("New(nil) = %v, want ErrInvalid", err)
	}
	if _, err := sluicebun.Open(nil); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Open(nil) = %v, want ErrInvalid", err)
	}
}

// TestNewRefusesShiftedTimes: bun writes a time.Time into the SQL text,
// and mysqldialect.WithTimeLocation makes it the wall clock of that zone.
func TestNewRefusesShiftedTimes(t *testing.T) {
	tg := mysqlTarget(t, false)
	tg.bunDial = func() schema.Dialect { return mysqldialect.New(mysqldialect.WithTimeLocation("Europe/Paris")) }
	db, err := tg.open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := sluicebun.New(db); !errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "WithTimeLocation") {
		t.Fatalf("New with WithTimeLocation(Europe/Paris) = %v, want ErrUnsupported naming WithTimeLocation", err)
	}
	tg.bunDial = func() schema.Dialect { return mysqldialect.New(mysqldialect.WithTimeLocation("UTC")) }
	if db, err = tg.open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := sluicebun.New(db); err != nil {
		t.Fatalf("New with WithTimeLocation(UTC) = %v, want an adapter", err)
	}
}

// TestNewRefusesForeignQuoting: bun escapes string literals as MySQL's and
// PostgreSQL's defaults read them. A session with other rules would store
// other bytes than sluice was given; New refuses it, and accepts the same
// server with its defaults.
func TestNewRefusesForeignQuoting(t *testing.T) {
	cases := []struct {
		name string
		tg   func(t testing.TB) target
	}{
		{"mysql NO_BACKSLASH_ESCAPES", func(t testing.TB) target {
			tg := mysqlTarget(t, false)
			cfg, _ := mysql.ParseDSN(tg.dsn)
			if cfg.Params == nil {
				cfg.Params = map[string]string{}
			}
			cfg.Params["sql_mode"] = "'NO_BACKSLASH_ESCAPES,STRICT_TRANS_TABLES'"
			tg.dsn = cfg.FormatDSN()
			return tg
		}},
		{"postgres standard_conforming_strings off", func(t testing.TB) target {
			tg := postgresTarget(t)
			sep := "?"
			if strings.Contains(tg.dsn, "?") {
				sep = "&"
			}
			tg.dsn += sep + "standard_conforming_strings=off"
			return tg
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, err := tc.tg(t).open()
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			// Shows the hazard: the backslash bun escapes is stored doubled
			// (MySQL) or read as an escape (PostgreSQL).
			var got string
			if err := db.QueryRowContext(context.Background(), "SELECT ?", `a\b`).Scan(&got); err != nil || got == `a\b` {
				t.Fatalf("SELECT 'a\\b' through bun = %q, %v; the session was meant to read literals differently", got, err)
			}
			if _, err := sluicebun.New(db); !errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "quoting") {
				t.Fatalf("New = %v, want ErrUnsupported about quoting", err)
			}
		})
	}
}

// TestInvalidStringsRefusedBeforeIO calls the adapter directly, past
// core.DB's own check: bun would write invalid UTF-8 as U+FFFD and drop a
// NUL on MySQL, so "a\xffb" and "a\xfeb" would share a row.
func TestInvalidStringsRefusedBeforeIO(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		tb := table(t, f, counter)
		for _, s := range []string{"a\xffb", "a\xfeb", "a\x00b", "\xed\xa0\x80"} {
			_, err := f.Adapter.Create(f.Ctx, tb, []driver.Assignment{{Column: "name", Value: s}})
			if !errors.Is(err, core.ErrInvalid) {
				t.Errorf("Create(name = %q) = %v, want ErrInvalid", s, err)
			}
			_, err = f.Adapter.FindOne(f.Ctx, tb, []driver.Where{{Column: "name", Op: driver.OpEq, Value: s}})
			if !errors.Is(err, core.ErrInvalid) {
				t.Errorf("FindOne(name = %q) = %v, want ErrInvalid", s, err)
			}
		}
		if n, err := f.DB.Count(f.Ctx, counter); err != nil || n != 0 {
			t.Fatalf("Count = %d, %v; want nothing stored", n, err)
		}
	})
}

// TestUnwrap: the adapter unwraps to the bun.IDB it was built on, and
// inside a transaction it began, to that bun.Tx.
func TestUnwrap(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		bdb := bunDB(t, f)
		a, err := sluicebun.New(bdb)
		if err != nil {
			t.Fatal(err)
		}
		if a.Unwrap() != bun.IDB(bdb) {
			t.Fatalf("Unwrap = %v, want the *bun.DB given to New", a.Unwrap())
		}
		err = f.DB.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
			btx, ok := tx.Adapter().(driver.Unwrapper).Unwrap().(bun.Tx)
			if !ok {
				t.Fatalf("inside InTx Unwrap = %T, want bun.Tx", tx.Adapter().(driver.Unwrapper).Unwrap())
			}
			// The bun.Tx is the transaction sluice's statements run in.
			if _, err := tx.Create(ctx, counter, map[string]any{"name": "in-tx"}); err != nil {
				return err
			}
			var n int64
			q := btx.NewSelect().TableExpr("?", bun.Ident(table(t, f, counter).Name)).Where("? = 'in-tx'", bun.Ident("name"))
			if n, err = q.Count(ctx); err != nil || n != 1 {
				t.Errorf("rows seen through the unwrapped bun.Tx = %d, %v; want 1", n, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestClientFoundRows shows MySQL's trap (an UPDATE that rewrites the same
// value reports 0 rows unless clientFoundRows is set) and that the adapter
// counts matched rows either way.
func TestClientFoundRows(t *testing.T) {
	for _, found := range []bool{false, true} {
		name := map[bool]string{false: "without", true: "with"}[found]
		t.Run(name, func(t *testing.T) {
			f := adaptertest.NewFixture(t, maker(func(t testing.TB) target { return mysqlTarget(t, found) }))
			mustCreate(t, f, f.DB, map[string]any{"name": "a", "hits": 5})
			mustCreate(t, f, f.DB, map[string]any{"name": "a", "hits": 5})
			res, err := bunDB(t, f).NewUpdate().TableExpr("?", bun.Ident(table(t, f, counter).Name)).
				Set("? = 5", bun.Ident("hits")).Where("? = 'a'", bun.Ident("name")).Exec(f.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); (n == 2) != found {
				t.Fatalf("driver reported %d rows for an identical rewrite of 2 rows; clientFoundRows=%v", n, found)
			}
			n, err := f.DB.UpdateMany(f.Ctx, counter, []core.Where{core.Eq("name", "a")}, map[string]any{"hits": 5})
			if err != nil || n != 2 {
				t.Fatalf("UpdateMany identical rewrite = %d, %v; want 2 matched", n, err)
			}
			row, ok, err := f.DB.Update(f.Ctx, counter, []core.Where{core.Eq("name", "a")}, map[string]any{"hits": 5})
			if err != nil || !ok || row.Int("hits") != 5 {
				t.Fatalf("Update identical rewrite = %v, %v, %v; want the row", row, ok, err)
			}
			row, ok, err = f.DB.IncrementOne(f.Ctx, core.IncrementRequest{Model: counter,
				Where: []core.Where{core.Eq("name", "a")}, Increment: map[string]int64{"hits": 0}})
			if err != nil || !ok || row.Int("hits") != 5 {
				t.Fatalf("IncrementOne by 0 = %v, %v, %v; want the row", row, ok, err)
			}
		})
	}
}

var errBoom = errors.New("boom")

// TestUserTransaction passes the caller's bun.Tx to Open: every call runs
// in it, a nested InTx is a savepoint (an error from it undoes its own
// writes and nothing else), and the caller's commit or rollback decides.
func TestUserTransaction(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		bdb := bunDB(t, f)
		for _, commit := range []bool{false, true} {
			tx, err := bdb.BeginTx(f.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			db, err := sluicebun.Open(tx, core.WithSchema(f.Schema))
			if err != nil {
				t.Fatal(err)
			}
			if got := db.Adapter().(driver.Unwrapper).Unwrap(); got != bun.IDB(tx) {
				t.Errorf("adapter on a user transaction unwraps to %v, want the caller's bun.Tx", got)
			}
			mustCreate(t, f, db, map[string]any{"name": "tx", "hits": 1})
			err = db.InTx(f.Ctx, func(ctx context.Context, inner *core.DB) error {
				if got := inner.Adapter().(driver.Unwrapper).Unwrap(); got != bun.IDB(tx) {
					t.Errorf("InTx inside a user transaction unwraps to %v, want the caller's bun.Tx", got)
				}
				row, ok, err := inner.IncrementOne(ctx, core.IncrementRequest{Model: counter,
					Where: []core.Where{core.Eq("name", "tx")}, Increment: map[string]int64{"hits": 2}})
				if err == nil && (!ok || row.Int("hits") != 3) {
					t.Errorf("IncrementOne in the user's transaction = %v, %v", row, ok)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			err = db.InTx(f.Ctx, func(ctx context.Context, inner *core.DB) error {
				if _, err := inner.Create(ctx, counter, map[string]any{"name": "undone"}); err != nil {
					return err
				}
				if _, _, err := inner.IncrementOne(ctx, core.IncrementRequest{Model: counter,
					Where: []core.Where{core.Eq("name", "tx")}, Increment: map[string]int64{"hits": 100}}); err != nil {
					return err
				}
				return errBoom
			})
			if !errors.Is(err, errBoom) {
				t.Fatalf("failing nested InTx = %v, want errBoom", err)
			}
			if exists(t, f, db, "undone") {
				t.Fatal("the failed nested InTx's row is still in the user's transaction")
			}
			if row, ok, err := db.FindOne(f.Ctx, counter, core.Eq("name", "tx")); err != nil || !ok || row.Int("hits") != 3 {
				t.Fatalf("after the failed nested InTx, in the user's transaction: %v, %v, %v; want hits 3", row, ok, err)
			}
			if exists(t, f, f.DB, "tx") {
				t.Fatal("another connection sees the user's uncommitted row")
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			row, ok, err := f.DB.FindOne(f.Ctx, counter, core.Eq("name", "tx"))
			switch {
			case err != nil:
				t.Fatal(err)
			case ok != commit:
				t.Fatalf("after commit=%v the row exists=%v", commit, ok)
			case ok && row.Int("hits") != 3:
				t.Fatalf("committed hits = %d, want 3", row.Int("hits"))
			}
			if exists(t, f, f.DB, "undone") {
				t.Fatal("the failed nested InTx's row was committed")
			}
		}
	})
}

// TestWithExecutor binds an adapter made by New to a transaction the
// caller began later, through Executor.
func TestWithExecutor(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		a, err := sluicebun.New(bunDB(t, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, commit := range []bool{false, true} {
			tx, err := bunDB(t, f).BeginTx(f.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			inTx := a.WithExecutor(sluicebun.Executor(tx))
			if got := inTx.Unwrap(); got != bun.IDB(tx) {
				t.Errorf("Unwrap = %v, want the caller's bun.Tx", got)
			}
			db, err := core.New(inTx, core.WithSchema(f.Schema))
			if err != nil {
				t.Fatal(err)
			}
			mustCreate(t, f, db, map[string]any{"name": "late"})
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := exists(t, f, f.DB, "late"); got != commit {
				t.Fatalf("after commit=%v the row exists=%v", commit, got)
			}
		}
	})
}

// TestConflictKeepsTransaction: a unique conflict inside a transaction is
// core.ErrConflict and leaves the transaction usable.
func TestConflictKeepsTransaction(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		err := f.DB.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
			if _, err := tx.Create(ctx, counter, map[string]any{"name": "a", "slot": "s1"}); err != nil {
				return err
			}
			_, err := tx.Create(ctx, counter, map[string]any{"name": "b", "slot": "s1"})
			if !errors.Is(err, core.ErrConflict) {
				t.Errorf("duplicate slot in a transaction = %v, want ErrConflict", err)
			}
			_, err = tx.Create(ctx, counter, map[string]any{"name": "c", "slot": "s2"})
			return err
		})
		if err != nil {
			t.Fatalf("transaction after a conflict: %v", err)
		}
		if n, err := f.DB.Count(f.Ctx, counter); err != nil || n != 2 {
			t.Fatalf("Count = %d, %v; want 2 committed rows", n, err)
		}
		_, err = f.DB.Create(f.Ctx, counter, map[string]any{"name": "d", "slot": "s2"})
		if !errors.Is(err, core.ErrConflict) {
			t.Fatalf("duplicate slot outside a transaction = %v, want ErrConflict", err)
		}
	})
}

// tricky are strings that break naive quoting, or bun's formatter, which
// reads ?, ?name, ?0 and \? in the statement text (never in values).
var tricky = []string{`it's`, `back\slash`, `ends with \`, `\'`, `what?`, `?0`, `$1`, `?name`, `?(name)`, `\?`,
	"tab\tnew\nline", "é 🚀", `'; DROP TABLE x; --`, `""`, "-- not a comment", "/* nor this */", " padded "}

// TestStringsRoundTrip stores and matches strings through bun's literals.
func TestStringsRoundTrip(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		var in []any
		for _, s := range tricky {
			mustCreate(t, f, f.DB, map[string]any{"name": s, "label": s})
			in = append(in, s)
		}
		for _, s := range tricky {
			row, ok, err := f.DB.FindOne(f.Ctx, counter, core.Eq("name", s))
			if err != nil || !ok || row.Text("label") != s {
				t.Errorf("FindOne(name = %q) = %v, %v, %v", s, row, ok, err)
			}
			row, ok, err = f.DB.IncrementOne(f.Ctx, core.IncrementRequest{Model: counter,
				Where: []core.Where{core.Eq("label", s)}, Increment: map[string]int64{"hits": 1}, Set: map[string]any{"label": s + s}})
			if err != nil || !ok || row.Text("label") != s+s || row.Text("name") != s {
				t.Errorf("IncrementOne(label = %q) = %v, %v, %v", s, row, ok, err)
			}
		}
		if n, err := f.DB.Count(f.Ctx, counter, core.In("name", in...)); err != nil || n != int64(len(tricky)) {
			t.Errorf("Count(name IN tricky) = %d, %v; want %d", n, err, len(tricky))
		}
	})
}

// TestSameStorageAsDatabaseSQL: what bun writes into the SQL text is stored
// exactly as the engine's database/sql executor binds it (strings byte for
// byte, times as the same UTC instant and, on SQLite and MySQL, the same
// text), so each finds the other's rows by equality.
func TestSameStorageAsDatabaseSQL(t *testing.T) {
	seen := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.FixedZone("UTC+5", 5*3600))
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		plain, err := sluicesql.New(f.Ctx, sluicesql.FromDB(bunDB(t, f).DB), sluicesql.Options{Dialect: f.Adapter.(*sluicesql.Adapter).Dialect()})
		if err != nil {
			t.Fatal(err)
		}
		sqlDB, err := core.New(plain, core.WithSchema(f.Schema))
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range tricky {
			writer, reader := f.DB, sqlDB
			if i%2 == 1 {
				writer, reader = sqlDB, f.DB
			}
			at := seen.Add(time.Duration(i) * time.Hour)
			mustCreate(t, f, writer, map[string]any{"name": s, "seenAt": at, "flag": i%3 == 0, "budget": int64(-1) << 62})
			row, ok, err := reader.FindOne(f.Ctx, counter, core.Eq("name", s), core.Eq("seenAt", at),
				core.Eq("flag", i%3 == 0), core.Eq("budget", int64(-1)<<62))
			if err != nil || !ok || row.Text("name") != s || !row.Time("seenAt").Equal(at) {
				t.Errorf("row %q at %v written by one executor, read by the other: %v, %v, %v", s, at, row, ok, err)
			}
		}
	})
}

func TestNULRefused(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		_, err := f.DB.Create(f.Ctx, counter, map[string]any{"name": "a\x00b"})
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "NUL") {
			t.Fatalf("Create with a NUL byte = %v, want ErrInvalid naming NUL", err)
		}
		if n, err := f.DB.Count(f.Ctx, counter); err != nil || n != 0 {
			t.Fatalf("Count = %d, %v; want nothing stored", n, err)
		}
	})
}

// statementLog is a bun query hook that records statements.
type statementLog struct {
	mu    sync.Mutex
	stmts []string
}

func (l *statementLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (l *statementLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmts = append(l.stmts, e.Query)
}

func (l *statementLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stmts
	l.stmts = nil
	return s
}

// counted counts the calls the engine makes on an executor, its
// transactions included.
type counted struct {
	x sluicesql.Executor
	n *atomic.Int64
}

func (c counted) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c.n.Add(1)
	return c.x.Exec(ctx, q, args...)
}

func (c counted) Query(ctx context.Context, q string, args ...any) (sluicesql.Rows, error) {
	c.n.Add(1)
	return c.x.Query(ctx, q, args...)
}

type countedBeginner struct{ counted }

func (c countedBeginner) Begin(ctx context.Context) (sluicesql.Tx, error) {
	c.n.Add(1)
	tx, err := c.x.(sluicesql.Beginner).Begin(ctx)
	if err != nil {
		return nil, err
	}
	return countedTx{counted{tx, c.n}, tx}, nil
}

type countedTx struct {
	counted
	tx sluicesql.Tx
}

func (c countedTx) Commit(ctx context.Context) error   { c.n.Add(1); return c.tx.Commit(ctx) }
func (c countedTx) Rollback(ctx context.Context) error { c.n.Add(1); return c.tx.Rollback(ctx) }

// TestHooksSeeEveryStatement: bun's query hooks see every statement the
// engine runs, with the values bun wrote into it, and every BEGIN, COMMIT,
// ROLLBACK and savepoint. The engine's calls on the executor are counted
// beside the hook: the two counts must agree.
func TestHooksSeeEveryStatement(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		log := &statementLog{}
		hooked := bunDB(t, f).WithQueryHook(log)
		var calls atomic.Int64
		a, err := sluicesql.New(f.Ctx, countedBeginner{counted{sluicebun.Executor(hooked), &calls}},
			sluicesql.Options{Dialect: f.Adapter.(*sluicesql.Adapter).Dialect(), Placeholder: sluicesql.Question})
		if err != nil {
			t.Fatal(err)
		}
		db, err := core.New(a, core.WithSchema(f.Schema))
		if err != nil {
			t.Fatal(err)
		}
		log.take()
		calls.Store(0)

		mustCreate(t, f, db, map[string]any{"name": "hook-key"})
		inc := core.IncrementRequest{Model: counter, Where: []core.Where{core.Eq("name", "hook-key"), core.Lt("hits", 10)},
			Increment: map[string]int64{"hits": 1}}
		if _, ok, err := db.IncrementOne(f.Ctx, inc); err != nil || !ok {
			t.Fatalf("IncrementOne = %v, %v", ok, err)
		}
		err = db.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
			if _, _, err := tx.IncrementOne(ctx, inc); err != nil {
				return err
			}
			err := tx.InTx(ctx, func(ctx context.Context, inner *core.DB) error {
				if _, err := inner.Create(ctx, counter, map[string]any{"name": "undone"}); err != nil {
					return err
				}
				return errBoom
			})
			if !errors.Is(err, errBoom) {
				t.Errorf("nested InTx = %v, want errBoom", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.DeleteMany(f.Ctx, counter, core.Eq("name", "hook-key")); err != nil {
			t.Fatal(err)
		}

		got := log.take()
		if int64(len(got)) != calls.Load() {
			t.Fatalf("bun's hooks saw %d statements, the engine made %d calls:\n%s", len(got), calls.Load(), strings.Join(got, "\n"))
		}
		all := strings.Join(got, "\n")
		for _, want := range []string{"INSERT", "UPDATE", "'hook-key'", "DELETE", "BEGIN", "COMMIT", "SAVEPOINT", "ROLLBACK TO SAVEPOINT"} {
			if !strings.Contains(all, want) {
				t.Errorf("no statement seen by the hooks contains %q:\n%s", want, all)
			}
		}
	})
}

// TestOpenSendsStatementsThroughBun: an adapter from Open runs its
// statements through the bun.DB it was given, with its hooks.
func TestOpenSendsStatementsThroughBun(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		log := &statementLog{}
		db, err := sluicebun.Open(bunDB(t, f).WithQueryHook(log), core.WithSchema(f.Schema))
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, f, db, map[string]any{"name": "open-key"})
		if !strings.Contains(strings.Join(log.take(), "\n"), "'open-key'") {
			t.Fatal("the hook did not see the INSERT with its value")
		}
	})
}

// TestMySQLParseTime: with parseTime=true the driver returns time.Time
// (in loc, UTC by default) instead of text; times still round-trip as
// instants and compare in guards.
func TestMySQLParseTime(t *testing.T) {
	f := adaptertest.NewFixture(t, maker(func(t testing.TB) target {
		tg := mysqlTarget(t, false)
		cfg, err := mysql.ParseDSN(tg.dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ParseTime = true
		tg.dsn = cfg.FormatDSN()
		return tg
	}))
	seen := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.FixedZone("CET", 3600))
	mustCreate(t, f, f.DB, map[string]any{"name": "t", "seenAt": seen})
	row, ok, err := f.DB.FindOne(f.Ctx, counter, core.Lt("seenAt", seen.Add(time.Millisecond)), core.Gt("seenAt", seen.Add(-time.Millisecond)))
	if err != nil || !ok || !row.Time("seenAt").Equal(seen) {
		t.Fatalf("FindOne around %v = %v, %v, %v", seen, row, ok, err)
	}
}

// TestDialects: New maps each bun dialect to the engine's.
func TestDialects(t *testing.T) {
	want := map[string]sluicesql.Dialect{"sqlite": sluicesql.SQLite, "postgres": sluicesql.Postgres, "mysql": sluicesql.MySQL}
	for _, tc := range targets[:3] {
		t.Run(tc.name, func(t *testing.T) {
			db, err := tc.tg(t).open()
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			a, err := sluicebun.New(db)
			if err != nil {
				t.Fatal(err)
			}
			if a.Dialect() != want[tc.name] {
				t.Fatalf("Dialect = %v, want %v", a.Dialect(), want[tc.name])
			}
		})
	}
	// pgdialect on a MySQL server: the engine's probe refuses the mismatch.
	tg := mysqlTarget(t, false)
	tg.bunDial = func() schema.Dialect { return pgdialect.New() }
	db, err := tg.open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := sluicebun.New(db); !errors.Is(err, core.ErrWrongDatabase) {
		t.Fatalf("pgdialect on MySQL = %v, want ErrWrongDatabase", err)
	}
}

// TestConn: on a bun.Conn every call runs on that one connection, and the
// engine begins its own transactions on it.
func TestConn(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		conn, err := bunDB(t, f).Conn(f.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		db, err := sluicebun.Open(conn, core.WithSchema(f.Schema))
		if err != nil {
			t.Fatal(err)
		}
		if got := db.Adapter().(driver.Unwrapper).Unwrap(); got != bun.IDB(conn) {
			t.Errorf("Unwrap = %v, want the bun.Conn", got)
		}
		err = db.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
			if _, ok := tx.Adapter().(driver.Unwrapper).Unwrap().(bun.Tx); !ok {
				t.Errorf("inside InTx Unwrap = %T, want bun.Tx", tx.Adapter().(driver.Unwrapper).Unwrap())
			}
			_, err := tx.Create(ctx, counter, map[string]any{"name": "on-conn"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !exists(t, f, f.DB, "on-conn") {
			t.Fatal("the transaction on the bun.Conn did not commit")
		}
	})
}

// TestPostgresBindsWithoutHooks: on PostgreSQL a *bun.DB without query
// hooks has the engine's statements run on its *sql.DB with bind
// parameters (bun's query counter does not move), and a hook added later,
// even after New, sees every statement again with bun's literals.
func TestPostgresBindsWithoutHooks(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		if f.Adapter.(*sluicesql.Adapter).Dialect() != sluicesql.Postgres {
			t.Skip("the bound path is PostgreSQL's only")
		}
		plain := bun.NewDB(bunDB(t, f).DB, pgdialect.New())
		db, err := sluicebun.Open(plain, core.WithSchema(f.Schema))
		if err != nil {
			t.Fatal(err)
		}
		before := plain.DBStats().Queries
		mustCreate(t, f, db, map[string]any{"name": "bound-key"})
		inc := core.IncrementRequest{Model: counter, Where: []core.Where{core.Eq("name", "bound-key"), core.Lt("hits", 10)},
			Increment: map[string]int64{"hits": 1}}
		row, ok, err := db.IncrementOne(f.Ctx, inc)
		if err != nil || !ok || row["hits"] != int64(1) {
			t.Fatalf("IncrementOne = %v, %v, %v; want hits 1", row, ok, err)
		}
		if n := plain.DBStats().Queries - before; n != 0 {
			t.Errorf("bun counted %d queries on a DB without hooks, want 0 (bound path)", n)
		}

		log := &statementLog{}
		plain.AddQueryHook(log)
		if _, ok, err := db.IncrementOne(f.Ctx, inc); err != nil || !ok {
			t.Fatalf("IncrementOne with a hook = %v, %v", ok, err)
		}
		if got := strings.Join(log.take(), "\n"); !strings.Contains(got, "UPDATE") || !strings.Contains(got, "'bound-key'") {
			t.Fatalf("a hook added after Open did not see the UPDATE with its value:\n%s", got)
		}
		if got, ok, err := db.FindOne(f.Ctx, counter, core.Eq("name", "bound-key")); err != nil || !ok || got["hits"] != int64(2) {
			t.Fatalf("FindOne = %v, %v, %v; want hits 2", got, ok, err)
		}
	})
}
