package gormtest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sluicegorm "github.com/sluice-go/sluice/adapters/gorm"
	"github.com/sluice-go/sluice/adapters/gorm/sqlitegorm"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// What is specific to gorm: how the adapter runs statements (through
// gorm's callbacks and logger), how it joins a gorm transaction, what
// Unwrap hands back, and which *gorm.DB it accepts.

func TestNewRejects(t *testing.T) {
	if _, err := sluicegorm.New(nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("New(nil) = %v, want ErrInvalid", err)
	}
	if _, err := sluicegorm.New(&gorm.DB{}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("New without a config = %v, want ErrInvalid", err)
	}
	if _, err := sluicegorm.New(&gorm.DB{Config: &gorm.Config{}}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("New without a dialector = %v, want ErrInvalid", err)
	}
	db := &gorm.DB{Config: &gorm.Config{Dialector: otherDialect{}}, Statement: &gorm.Statement{}}
	if _, err := sluicegorm.Open(db); !errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "sqlserver") {
		t.Errorf("New on sqlserver = %v, want ErrUnsupported naming the dialect", err)
	}

	g, err := sqlitegorm.Open(filepath.Join(t.TempDir(), "x.db"), quiet())
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := g.DB()
	defer pool.Close()
	if _, err := sluicegorm.New(g); err != nil {
		t.Fatalf("New on a good SQLite *gorm.DB = %v", err)
	}

	// A *gorm.DB whose chain already failed would fail every statement.
	earlier := errors.New("earlier failure")
	bad := g.Session(&gorm.Session{})
	bad.AddError(earlier)
	if _, err := sluicegorm.New(bad); !errors.Is(err, core.ErrInvalid) || !errors.Is(err, earlier) {
		t.Errorf("New on a *gorm.DB with an error = %v, want ErrInvalid wrapping it", err)
	}

	// The PostgreSQL dialector on an SQLite pool: gorm opens it without a
	// word, New's probe refuses it.
	mismatch, err := gorm.Open(postgres.New(postgres.Config{Conn: pool}), quiet())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sluicegorm.New(mismatch); !errors.Is(err, core.ErrWrongDatabase) {
		t.Errorf("New with the postgres dialector on SQLite = %v, want ErrWrongDatabase", err)
	}
}

// otherDialect is a dialect sluicegorm does not support.
type otherDialect struct{ gorm.Dialector }

func (otherDialect) Name() string { return "sqlserver" }

// Every statement the engine runs goes through gorm's callbacks (a plugin
// registered on Raw and Row sees it) and gorm's logger, with its
// arguments in place.
func TestGormSeesEveryStatement(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, f *adaptertest.Fixture) {
		rec := &sqlRecorder{}
		g := gormOf(t, f.Adapter).Session(&gorm.Session{Logger: rec})
		var hooked atomic.Int64
		count := func(*gorm.DB) { hooked.Add(1) }
		if err := g.Callback().Raw().After("gorm:raw").Register("sluicetest:raw", count); err != nil {
			t.Fatal(err)
		}
		if err := g.Callback().Row().After("gorm:row").Register("sluicetest:row", count); err != nil {
			t.Fatal(err)
		}
		db, err := sluicegorm.Open(g, core.WithSchema(f.Schema))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(rec.statements()); n == 0 || hooked.Load() != int64(n) {
			t.Fatalf("after Open: the logger saw %d statements, the callbacks %d; want the probe, seen by both", n, hooked.Load())
		}
		mustCreate(t, db, "rateLimit", map[string]any{"key": "seen-key", "count": 0, "lastRequest": 0})
		if _, ok, err := db.IncrementOne(f.Ctx, core.IncrementRequest{Model: "rateLimit", Where: []core.Where{core.Eq("key", "seen-key")}, Increment: map[string]int64{"count": 1}}); err != nil || !ok {
			t.Fatalf("IncrementOne = %v, %v", ok, err)
		}
		err = db.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
			return tx.InTx(ctx, func(ctx context.Context, in *core.DB) error {
				_, err := in.Count(ctx, "rateLimit", core.Eq("key", "seen-key"))
				return err
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		var insert, update, savepoint bool
		stmts := rec.statements()
		for _, q := range stmts {
			insert = insert || (strings.HasPrefix(q, "INSERT INTO") && strings.Contains(q, "seen-key"))
			update = update || (strings.HasPrefix(q, "UPDATE") && strings.Contains(q, "count"))
			savepoint = savepoint || strings.HasPrefix(strings.ToUpper(q), "SAVEPOINT")
		}
		if !insert || !update || !savepoint {
			t.Fatalf("the logger saw INSERT %v, UPDATE %v, SAVEPOINT %v; statements: %q", insert, update, savepoint, stmts)
		}
		if hooked.Load() != int64(len(stmts)) {
			t.Fatalf("the callbacks saw %d statements, the logger %d: %q", hooked.Load(), len(stmts), stmts)
		}
	})
}

// sqlRecorder is a gorm logger that keeps the SQL it is given.
type sqlRecorder struct {
	mu  sync.Mutex
	sql []string
}

func (r *sqlRecorder) LogMode(logger.LogLevel) logger.Interface { return r }
func (r *sqlRecorder) Info(context.Context, string, ...any)     {}
func (r *sqlRecorder) Warn(context.Context, string, ...any)     {}
func (r *sqlRecorder) Error(context.Context, string, ...any)    {}
func (r *sqlRecorder) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	q, _ := fc()
	r.mu.Lock()
	r.sql = append(r.sql, q)
	r.mu.Unlock()
}

func (r *sqlRecorder) statements() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sql...)
}

// sluice opened on the tx of gorm's own db.Transaction joins it: sluice's
// writes and gorm's commit or roll back together, a failing InTx inside
// undoes only its own part (a savepoint), and Unwrap hands back a
// *gorm.DB on that same transaction at every level.
func TestJoinsGormTransaction(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, f *adaptertest.Fixture) {
		ctx := f.Ctx
		table := b.dialect.Quote(counterTable(t, f))
		insert := "INSERT INTO " + table + " (" + b.dialect.Quote("name") + ") VALUES (?)"
		count := func(db *core.DB, name string) int64 {
			t.Helper()
			n, err := db.Count(ctx, "counter", core.Eq("name", name))
			if err != nil {
				t.Fatalf("Count(%s): %v", name, err)
			}
			return n
		}
		sameTx := func(what string, db *core.DB, tx *gorm.DB) {
			t.Helper()
			if u := gormOf(t, db.Adapter()); u.Statement.ConnPool != tx.Statement.ConnPool {
				t.Errorf("%s: Unwrap gave a *gorm.DB on %T %p, not on the caller's transaction %p", what, u.Statement.ConnPool, u.Statement.ConnPool, tx.Statement.ConnPool)
			}
		}
		boom := errors.New("boom")
		for _, commit := range []bool{false, true} {
			name := fmt.Sprintf("commit-%v", commit)
			err := gormOf(t, f.Adapter).WithContext(ctx).Transaction(func(tx *gorm.DB) error {
				db, err := sluicegorm.Open(tx, core.WithSchema(f.Schema))
				if err != nil {
					return err
				}
				sameTx("top level", db, tx)
				mustCreate(t, db, "counter", map[string]any{"name": name})
				if err := tx.Exec(insert, name+"-gorm").Error; err != nil {
					return err
				}
				if n := count(db, name+"-gorm"); n != 1 {
					t.Errorf("sluice sees %d rows written by gorm in the same transaction, want 1", n)
				}
				err = db.InTx(ctx, func(ctx context.Context, in *core.DB) error {
					sameTx("inside InTx", in, tx)
					mustCreate(t, in, "counter", map[string]any{"name": name + "-inner"})
					if _, ok, err := in.IncrementOne(ctx, core.IncrementRequest{Model: "counter", Where: []core.Where{core.Eq("name", name)}, Increment: map[string]int64{"hits": 1}}); err != nil || !ok {
						t.Errorf("IncrementOne inside InTx = %v, %v", ok, err)
					}
					return boom
				})
				if !errors.Is(err, boom) {
					t.Fatalf("failing InTx = %v, want boom", err)
				}
				if n := count(db, name+"-inner"); n != 0 {
					t.Errorf("after the failed InTx: %d inner rows, want 0 (rolled back to the savepoint)", n)
				}
				row, ok, err := db.FindOne(ctx, "counter", core.Eq("name", name))
				if err != nil || !ok || row.Int("hits") != 0 {
					t.Errorf("after the failed InTx: %v, %v, %v; want the outer row, hits 0", row, ok, err)
				}
				err = db.InTx(ctx, func(ctx context.Context, in *core.DB) error {
					_, err := in.Create(ctx, "counter", map[string]any{"name": name + "-inner-ok"})
					return err
				})
				if err != nil {
					t.Fatalf("succeeding InTx = %v", err)
				}
				if !commit {
					return boom
				}
				return nil
			})
			if commit && err != nil || !commit && !errors.Is(err, boom) {
				t.Fatalf("gorm Transaction (commit %v) = %v", commit, err)
			}
			want := int64(0)
			if commit {
				want = 1
			}
			for _, n := range []string{name, name + "-gorm", name + "-inner-ok"} {
				if got := count(f.DB, n); got != want {
					t.Errorf("after gorm's Transaction (commit %v): %d rows %q, want %d", commit, got, n, want)
				}
			}
			if got := count(f.DB, name+"-inner"); got != 0 {
				t.Errorf("after gorm's Transaction (commit %v): %d rows of the rolled-back savepoint, want 0", commit, got)
			}
		}
	})
}

// On a pool, Unwrap returns the *gorm.DB the adapter was made from, and
// the adapter begins its own transactions (see TestUnwrap for inside them).
func TestUnwrapOnPool(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, f *adaptertest.Fixture) {
		g := gormOf(t, f.Adapter)
		if _, ok := g.Statement.ConnPool.(gorm.TxCommitter); ok {
			t.Fatalf("Unwrap on a pool gave a %T, a transaction", g.Statement.ConnPool)
		}
		pool, err := g.DB()
		if err != nil {
			t.Fatal(err)
		}
		if g.Statement.ConnPool != gorm.ConnPool(pool) {
			t.Fatalf("Unwrap gave a *gorm.DB on %p, not the pool %p the adapter was made from", g.Statement.ConnPool, pool)
		}
	})
}

// With gorm.Config.TranslateError, gorm replaces a unique violation with
// its own ErrDuplicatedKey, which has no code: it is still a conflict.
func TestTranslateError(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, f *adaptertest.Fixture) {
		g, err := gorm.Open(gormOf(t, f.Adapter).Dialector, &gorm.Config{TranslateError: true, Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		db, err := sluicegorm.Open(g, core.WithSchema(f.Schema))
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, db, "counter", map[string]any{"name": "a", "slot": "s1"})
		mustCreate(t, db, "counter", map[string]any{"name": "b", "slot": "s2"})
		if _, err := db.Create(f.Ctx, "counter", map[string]any{"name": "c", "slot": "s1"}); !errors.Is(err, core.ErrConflict) {
			t.Errorf("duplicate Create = %v, want ErrConflict", err)
		}
		if _, _, err := db.Update(f.Ctx, "counter", []core.Where{core.Eq("name", "b")}, map[string]any{"slot": "s1"}); !errors.Is(err, core.ErrConflict) {
			t.Errorf("Update onto a taken unique value = %v, want ErrConflict", err)
		}
		if _, err := db.UpdateMany(f.Ctx, "counter", []core.Where{core.Eq("name", "b")}, map[string]any{"slot": "s1"}); !errors.Is(err, core.ErrConflict) {
			t.Errorf("UpdateMany onto a taken unique value = %v, want ErrConflict", err)
		}
	})
}

// gorm's PrepareStmt mode runs every statement as a prepared statement;
// the adapter works in it, savepoints included.
func TestPrepareStmt(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, f *adaptertest.Fixture) {
		g := gormOf(t, f.Adapter).Session(&gorm.Session{PrepareStmt: true})
		db, err := sluicegorm.Open(g, core.WithSchema(f.Schema))
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, db, "rateLimit", map[string]any{"key": "k", "count": 0, "lastRequest": 0})
		inc := core.IncrementRequest{Model: "rateLimit", Where: []core.Where{core.Eq("key", "k")}, Increment: map[string]int64{"count": 1}}
		boom := errors.New("boom")
		err = db.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
			if _, ok, err := tx.IncrementOne(ctx, inc); err != nil || !ok {
				return fmt.Errorf("IncrementOne = %v, %w", ok, err)
			}
			err := tx.InTx(ctx, func(ctx context.Context, in *core.DB) error {
				if _, _, err := in.IncrementOne(ctx, inc); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				return fmt.Errorf("nested InTx = %w, want boom", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, ok, err := db.IncrementOne(f.Ctx, inc); err != nil || !ok {
				t.Fatalf("IncrementOne = %v, %v", ok, err)
			}
		}
		row, ok, err := db.FindOne(f.Ctx, "rateLimit", core.Eq("key", "k"))
		if err != nil || !ok || row.Int("count") != 3 {
			t.Fatalf("FindOne = %v, %v, %v; want count 3", row, ok, err)
		}
	})
}
