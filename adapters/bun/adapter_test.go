package sluicebun_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/sluice-go/sluice/adapters/bun"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
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
	db, ok := f.Adapter.(core.Unwrapper).Unwrap().(*bun.DB)
	if !ok {
		t.Fatalf("Unwrap returned %T, want *bun.DB", f.Adapter.(core.Unwrapper).Unwrap())
	}
	return db
}

func table(t *testing.T, f *adaptertest.Fixture, model string) *core.Table {
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

func TestNewRefusesNil(t *testing.T) {
	if _, err := sluicebun.New(nil); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("New(nil) = %v, want ErrInvalid", err)
	}
	if _, err := sluicebun.Open(nil); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Open(nil) = %v, want ErrInvalid", err)
	}
}

func TestUnknownOperatorBeforeIO(t *testing.T) {
	db, err := sqliteTarget(t).open()
	if err != nil {
		t.Fatal(err)
	}
	db.Close() // any I/O now fails with "sql: database is closed"
	a, err := sluicebun.New(db)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := core.MustSchema(core.Naming{}, adaptertest.CounterModel()).Table(counter)
	_, err = a.FindOne(context.Background(), tb, []core.Where{{Field: "hits", Op: 99, Value: int64(1)}})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "unknown operator") {
		t.Fatalf("FindOne with operator 99 = %v, want ErrInvalid naming the operator", err)
	}
}

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
			if _, ok := tx.Adapter().(core.Unwrapper).Unwrap().(bun.Tx); !ok {
				t.Errorf("inside InTx Unwrap = %T, want bun.Tx", tx.Adapter().(core.Unwrapper).Unwrap())
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

// TestUserTransaction passes the caller's bun.Tx to Open: every call runs
// in it, InTx runs directly in it, and the caller's commit or rollback
// decides.
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
			mustCreate(t, f, db, map[string]any{"name": "tx", "hits": 1})
			err = db.InTx(f.Ctx, func(ctx context.Context, inner *core.DB) error {
				if got := inner.Adapter().(core.Unwrapper).Unwrap(); got != bun.IDB(tx) {
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
		}
	})
}

// TestConflictKeepsTransaction: a unique conflict inside a transaction is
// core.ErrConflict and leaves the transaction usable (on PostgreSQL a failed
// INSERT would abort it; the adapter uses ON CONFLICT DO NOTHING).
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

// TestStringsRoundTrip stores and matches strings that break naive quoting
// or placeholder handling.
func TestStringsRoundTrip(t *testing.T) {
	tricky := []string{`it's`, `back\slash`, `ends with \`, `what?`, `?0`, `$1`, `?name`,
		"tab\tnew\nline", "é 🚀", `'; DROP TABLE x; --`, `""`}
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

// TestStatements checks the statements IncrementOne sends, as bun query
// hooks see them: one UPDATE on PostgreSQL and SQLite, a locking
// transaction on MySQL.
func TestStatements(t *testing.T) {
	eachTarget(t, func(t *testing.T, f *adaptertest.Fixture) {
		log := &statementLog{}
		a, err := sluicebun.New(bunDB(t, f).WithQueryHook(log), sluicebun.WithQueryHooks())
		if err != nil {
			t.Fatal(err)
		}
		db, err := core.New(a, core.WithSchema(f.Schema))
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, f, f.DB, map[string]any{"name": "a", "slot": "x"})
		mustCreate(t, f, f.DB, map[string]any{"name": "a"})
		byName := core.IncrementRequest{Model: counter, Where: []core.Where{core.Eq("name", "a"), core.Lt("hits", 10)},
			Increment: map[string]int64{"hits": 1}}
		bySlot := core.IncrementRequest{Model: counter, Where: []core.Where{core.Eq("slot", "x")},
			Increment: map[string]int64{"hits": 1}}
		for _, req := range []core.IncrementRequest{byName, bySlot} {
			if _, ok, err := db.IncrementOne(f.Ctx, req); err != nil || !ok {
				t.Fatalf("IncrementOne = %v, %v", ok, err)
			}
		}
		got := log.take()
		switch a.Dialect() {
		case dialect.PG, dialect.SQLite:
			if len(got) != 2 {
				t.Fatalf("statements = %q, want one UPDATE per call", got)
			}
			lock := map[dialect.Name]string{dialect.PG: "FOR UPDATE", dialect.SQLite: "rowid"}[a.Dialect()]
			if !strings.HasPrefix(got[0], "UPDATE") || !strings.Contains(got[0], lock) || !strings.Contains(got[0], "RETURNING") {
				t.Errorf("guard on a non-unique column: %s; want UPDATE … %s … RETURNING", got[0], lock)
			}
			if strings.Contains(got[1], "SELECT") || !strings.Contains(got[1], "RETURNING") {
				t.Errorf("guard on a unique column: %s; want a plain UPDATE … RETURNING", got[1])
			}
		case dialect.MySQL:
			if len(got) != 10 || got[0] != "BEGIN" || !strings.HasSuffix(got[1], "FOR UPDATE") ||
				!strings.HasPrefix(got[2], "UPDATE") || !strings.HasPrefix(got[3], "SELECT") || got[4] != "COMMIT" {
				t.Fatalf("statements = %q, want BEGIN, SELECT … FOR UPDATE, UPDATE, SELECT, COMMIT per call", got)
			}
		}
		if a.Dialect() == dialect.PG {
			// Without WithQueryHooks, PostgreSQL statements bind $n
			// parameters beneath bun, so its hooks do not see them.
			plain, err := sluicebun.Open(bunDB(t, f).WithQueryHook(log), core.WithSchema(f.Schema))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok, err := plain.IncrementOne(f.Ctx, bySlot); err != nil || !ok {
				t.Fatalf("IncrementOne = %v, %v", ok, err)
			}
			if got := log.take(); len(got) != 0 {
				t.Fatalf("statements seen by hooks without WithQueryHooks: %q", got)
			}
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
