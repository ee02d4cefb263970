package sluiceent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	sluiceent "github.com/sluice-go/sluice/adapters/ent"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
)

const counter = "counter"

func newCounter(t *testing.T, e *env, db *core.DB, values map[string]any) core.Row {
	t.Helper()
	row, err := db.Create(e.ctx, counter, values)
	mustNoErr(t, err)
	return row
}

func TestNew(t *testing.T) {
	if _, err := sluiceent.New(nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("New(nil) = %v, want ErrInvalid", err)
	}
	gremlin := entsql.OpenDB(dialect.Gremlin, nil)
	if _, err := sluiceent.New(gremlin); !errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "gremlin") {
		t.Errorf("New(gremlin driver) = %v, want ErrUnsupported naming the dialect", err)
	}
	if _, err := sluiceent.NewTx(nil, dialect.Postgres); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("NewTx(nil) = %v, want ErrInvalid", err)
	}
	for name, want := range map[string]string{"sqlite": dialect.SQLite, "sqlite3": dialect.SQLite, "postgres": dialect.Postgres, "mysql": dialect.MySQL} {
		a, err := sluiceent.NewTx(dialect.NopTx(entsql.OpenDB(want, nil)), name)
		if err != nil || a.Dialect() != want {
			t.Errorf("NewTx(_, %q) = %v, %v; want dialect %q", name, a, err, want)
		}
	}
}

// TestUnwrap checks the escape hatch: the driver, or the transaction.
func TestUnwrap(t *testing.T) {
	e := newEnv(t, sqliteBackend())
	a, err := sluiceent.New(e.drv)
	mustNoErr(t, err)
	if got := a.Unwrap(); got != e.drv {
		t.Errorf("Unwrap() = %T %p, want the driver %p", got, got, e.drv)
	}
	debug := dialect.Debug(e.drv, func(...any) {})
	d, err := sluiceent.New(debug)
	mustNoErr(t, err)
	if d.Unwrap() != debug || d.Dialect() != dialect.SQLite {
		t.Errorf("New(debug driver): Unwrap() = %T, Dialect() = %q", d.Unwrap(), d.Dialect())
	}
	tx, err := e.drv.Tx(e.ctx)
	mustNoErr(t, err)
	defer tx.Rollback()
	if got := a.WithTx(tx).Unwrap(); got != tx {
		t.Errorf("WithTx(tx).Unwrap() = %T, want the transaction", got)
	}
	var u core.Unwrapper = a
	if _, ok := u.Unwrap().(dialect.Driver); !ok {
		t.Errorf("Unwrap() is not a dialect.Driver")
	}
}

// TestNullDeltaAndGuards checks NULL + delta = NULL (ent's Add would give
// delta) and that Eq(nil)/Ne(nil) render IS NULL / IS NOT NULL.
func TestNullDeltaAndGuards(t *testing.T) {
	forEach(t, allBackends(), func(t *testing.T, e *env) {
		row := newCounter(t, e, e.db, map[string]any{"name": "n", "hits": 1})
		id := row.Int("id")
		got, ok, err := e.db.IncrementOne(e.ctx, core.IncrementRequest{Model: counter,
			Where: []core.Where{core.Eq("id", id), core.Eq("budget", nil)}, Increment: map[string]int64{"budget": 5, "hits": 1}})
		mustNoErr(t, err)
		if !ok || !got.IsNull("budget") || got.Int("hits") != 2 {
			t.Fatalf("IncrementOne on a NULL budget = %v, %v; want budget NULL, hits 2", got, ok)
		}
		_, ok, err = e.db.IncrementOne(e.ctx, core.IncrementRequest{Model: counter,
			Where: []core.Where{core.Eq("id", id), core.Ne("budget", nil)}, Increment: map[string]int64{"hits": 1}})
		mustNoErr(t, err)
		if ok {
			t.Fatal("Ne(budget, nil) matched a row whose budget is NULL")
		}
		n, err := e.db.Count(e.ctx, counter, core.Eq("budget", nil))
		mustNoErr(t, err)
		if n != 1 {
			t.Fatalf("Count(budget IS NULL) = %d, want 1", n)
		}
	})
}

// TestClientFoundRows checks the MySQL paths whose result MySQL reports as
// rows changed unless clientFoundRows is set: a write that changes nothing
// must still count as a match, with the option on and off.
func TestClientFoundRows(t *testing.T) {
	forEach(t, []backend{mysqlBackend(false), mysqlBackend(true)}, func(t *testing.T, e *env) {
		a := newCounter(t, e, e.db, map[string]any{"name": "same", "hits": 3, "label": "x"})
		newCounter(t, e, e.db, map[string]any{"name": "same", "hits": 3, "label": "x"})
		n, err := e.db.UpdateMany(e.ctx, counter, []core.Where{core.Eq("name", "same")}, map[string]any{"label": "x"})
		mustNoErr(t, err)
		if n != 2 {
			t.Errorf("UpdateMany rewriting the same value = %d, want 2 matched", n)
		}
		row, ok, err := e.db.IncrementOne(e.ctx, core.IncrementRequest{Model: counter,
			Where: []core.Where{core.Eq("id", a.Int("id"))}, Increment: map[string]int64{"hits": 0}})
		mustNoErr(t, err)
		if !ok || row.Int("hits") != 3 {
			t.Errorf("IncrementOne by 0 = %v, %v; want the row with hits 3", row, ok)
		}
		row, ok, err = e.db.Update(e.ctx, counter, []core.Where{core.Eq("name", "same")}, map[string]any{"label": "x"})
		mustNoErr(t, err)
		if !ok || row.Int("id") != a.Int("id") {
			t.Errorf("Update rewriting the same value = %v, %v; want the first row", row, ok)
		}
		ok, err = e.db.Delete(e.ctx, counter, core.Eq("name", "same"))
		mustNoErr(t, err)
		if n, _ := e.db.Count(e.ctx, counter); !ok || n != 1 {
			t.Errorf("Delete = %v, then %d rows; want true and 1", ok, n)
		}
	})
}

// TestUserTransaction runs sluice inside a transaction the caller began on
// the ent driver: its writes commit or roll back with the caller's, and
// InTx inside it does not nest.
func TestUserTransaction(t *testing.T) {
	forEach(t, allBackends(), func(t *testing.T, e *env) {
		a, err := sluiceent.New(e.drv)
		mustNoErr(t, err)
		row := newCounter(t, e, e.db, map[string]any{"name": "tx", "hits": 0})
		where := []core.Where{core.Eq("id", row.Int("id"))}

		for _, commit := range []bool{false, true} {
			tx, err := e.drv.Tx(e.ctx)
			mustNoErr(t, err)
			txdb, err := core.New(a.WithTx(tx), core.WithSchema(e.schema))
			mustNoErr(t, err)
			_, ok, err := txdb.IncrementOne(e.ctx, core.IncrementRequest{Model: counter, Where: where, Increment: map[string]int64{"hits": 1}})
			if err != nil || !ok {
				t.Fatalf("IncrementOne in the caller's transaction: %v, %v", ok, err)
			}
			err = txdb.InTx(e.ctx, func(ctx context.Context, inner *core.DB) error {
				_, err := inner.Create(ctx, counter, map[string]any{"name": "inner"})
				return err
			})
			mustNoErr(t, err)
			if n, _ := txdb.Count(e.ctx, counter, core.Eq("name", "inner")); n != 1 {
				t.Fatalf("inside the transaction: %d inner rows, want 1", n)
			}
			if commit {
				mustNoErr(t, tx.Commit())
			} else {
				mustNoErr(t, tx.Rollback())
			}
		}
		got, _, err := e.db.FindOne(e.ctx, counter, where...)
		mustNoErr(t, err)
		inner, err := e.db.Count(e.ctx, counter, core.Eq("name", "inner"))
		mustNoErr(t, err)
		if got.Int("hits") != 1 || inner != 1 {
			t.Errorf("after a rollback and a commit: hits %d, inner rows %d; want 1 and 1", got.Int("hits"), inner)
		}

		// The adapter's own transactions: an error rolls back.
		err = e.db.InTx(e.ctx, func(ctx context.Context, tx *core.DB) error {
			if _, err := tx.Create(ctx, counter, map[string]any{"name": "gone"}); err != nil {
				return err
			}
			return errTest
		})
		if !errors.Is(err, errTest) {
			t.Fatalf("InTx = %v, want the function's error", err)
		}
		if n, _ := e.db.Count(e.ctx, counter, core.Eq("name", "gone")); n != 0 {
			t.Errorf("InTx rolled back, yet %d rows remain", n)
		}
	})
}

// TestConflict checks that unique violations map to core.ErrConflict on
// every driver, and that on PostgreSQL a conflicting Create does not abort
// the surrounding transaction.
func TestConflict(t *testing.T) {
	forEach(t, allBackends(), func(t *testing.T, e *env) {
		newCounter(t, e, e.db, map[string]any{"name": "a", "slot": "s1"})
		other := newCounter(t, e, e.db, map[string]any{"name": "b", "slot": "s2"})
		_, err := e.db.Create(e.ctx, counter, map[string]any{"name": "c", "slot": "s1"})
		if !errors.Is(err, core.ErrConflict) {
			t.Errorf("Create with a duplicate slot = %v, want ErrConflict", err)
		}
		_, _, err = e.db.Update(e.ctx, counter, []core.Where{core.Eq("id", other.Int("id"))}, map[string]any{"slot": "s1"})
		if !errors.Is(err, core.ErrConflict) {
			t.Errorf("Update to a duplicate slot = %v, want ErrConflict", err)
		}
		_, err = e.db.UpdateMany(e.ctx, counter, []core.Where{core.Eq("name", "b")}, map[string]any{"slot": "s1"})
		if !errors.Is(err, core.ErrConflict) {
			t.Errorf("UpdateMany to a duplicate slot = %v, want ErrConflict", err)
		}
		err = e.db.InTx(e.ctx, func(ctx context.Context, tx *core.DB) error {
			if _, err := tx.Create(ctx, counter, map[string]any{"name": "d", "slot": "s1"}); !errors.Is(err, core.ErrConflict) {
				return fmt.Errorf("Create in a transaction = %v, want ErrConflict", err)
			}
			_, err := tx.Create(ctx, counter, map[string]any{"name": "after-conflict"})
			return err
		})
		mustNoErr(t, err)
		if n, _ := e.db.Count(e.ctx, counter, core.Eq("name", "after-conflict")); n != 1 {
			t.Errorf("the transaction went on after the conflict, yet %d rows were committed", n)
		}
	})
}

// TestTimes checks that times go in as UTC (text in core.FormatTime on
// SQLite), come back equal, and that range guards on them work.
func TestTimes(t *testing.T) {
	forEach(t, allBackends(), func(t *testing.T, e *env) {
		cet := time.FixedZone("CET", 3600)
		at := time.Date(2024, 1, 2, 13, 4, 5, 678_901_234, cet)
		row := newCounter(t, e, e.db, map[string]any{"name": "t", "seenAt": at})
		want := at.UTC().Truncate(time.Millisecond)
		if !row.Time("seenAt").Equal(want) {
			t.Errorf("seenAt = %v, want %v", row.Time("seenAt"), want)
		}
		n, err := e.db.Count(e.ctx, counter, core.Gte("seenAt", want), core.Lt("seenAt", want.Add(time.Millisecond)))
		mustNoErr(t, err)
		if n != 1 {
			t.Errorf("range guard around the stored time matched %d rows, want 1", n)
		}
		if e.b.dialect == dialect.SQLite {
			tb := e.table(t, counter)
			var raw string
			rows, err := e.drv.QueryContext(e.ctx, fmt.Sprintf(`SELECT "seen_at" FROM %q`, tb.Name))
			mustNoErr(t, err)
			for rows.Next() {
				mustNoErr(t, rows.Scan(&raw))
			}
			rows.Close()
			if raw != "2024-01-02T12:04:05.678Z" {
				t.Errorf("SQLite stored %q, want core.FormatTime text", raw)
			}
		}
	})
}

// TestStatements checks, through ent's DebugDriver, which statement each
// dialect runs: the single-row subquery only when the guard needs it, and
// a lock only where the dialect has one.
func TestStatements(t *testing.T) {
	forEach(t, allBackends(), func(t *testing.T, e *env) {
		var mu sync.Mutex
		var log []string
		debug := dialect.Debug(e.drv, func(v ...any) {
			mu.Lock()
			log = append(log, fmt.Sprint(v...))
			mu.Unlock()
		})
		db, err := sluiceent.Open(debug, core.WithSchema(e.schema))
		mustNoErr(t, err)
		row := newCounter(t, e, db, map[string]any{"name": "s"})
		run := func(where ...core.Where) string {
			mu.Lock()
			log = nil
			mu.Unlock()
			_, ok, err := db.IncrementOne(e.ctx, core.IncrementRequest{Model: counter, Where: where, Increment: map[string]int64{"hits": 1}})
			mustNoErr(t, err)
			if !ok {
				t.Fatalf("IncrementOne(%v) did not match", where)
			}
			mu.Lock()
			defer mu.Unlock()
			return strings.Join(log, "\n")
		}
		byID := run(core.Eq("id", row.Int("id")))
		byName := run(core.Eq("name", "s"))
		switch e.b.dialect {
		case dialect.MySQL:
			for _, q := range []string{byID, byName} {
				if !strings.Contains(q, "FOR UPDATE") || strings.Contains(q, "RETURNING") || !strings.Contains(q, "committed") {
					t.Errorf("MySQL IncrementOne should lock, update and read back in a transaction, ran:\n%s", q)
				}
			}
		default:
			if strings.Contains(byID, "SELECT") || !strings.Contains(byID, "RETURNING") {
				t.Errorf("a guard on the primary key needs no subquery, ran:\n%s", byID)
			}
			if !strings.Contains(byName, "(SELECT") || strings.Contains(byName, "COALESCE") {
				t.Errorf("a guard on a non-unique column needs the single-row subquery and no COALESCE, ran:\n%s", byName)
			}
			if lock := strings.Contains(byName, "FOR UPDATE"); lock != (e.b.dialect == dialect.Postgres) {
				t.Errorf("FOR UPDATE in the subquery: %v on %s, ran:\n%s", lock, e.b.name, byName)
			}
		}
	})
}

// TestAtMostOneUnderLoad releases many goroutines on three rows that share
// the guard, each with a cap: exactly the capacity succeeds, no row passes
// its cap, and no caller sees a false miss while capacity is left.
func TestAtMostOneUnderLoad(t *testing.T) {
	forEach(t, allBackends(), func(t *testing.T, e *env) {
		// Exactly as many callers as capacity: a single false miss shows.
		const rows, capacity, callers = 3, 10, 30
		for range rows {
			newCounter(t, e, e.db, map[string]any{"name": "load", "hits": 0})
		}
		var ok atomic.Int64
		var firstErr atomic.Value
		adaptertest.Release(callers, func(int) {
			_, matched, err := e.db.IncrementOne(e.ctx, core.IncrementRequest{Model: counter,
				Where: []core.Where{core.Eq("name", "load"), core.Lt("hits", capacity)}, Increment: map[string]int64{"hits": 1}})
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
			if matched {
				ok.Add(1)
			}
		})
		if err := firstErr.Load(); err != nil {
			t.Fatal(err)
		}
		if ok.Load() != rows*capacity {
			t.Errorf("%d increments succeeded, want %d", ok.Load(), rows*capacity)
		}
		_, matched, err := e.db.IncrementOne(e.ctx, core.IncrementRequest{Model: counter,
			Where: []core.Where{core.Eq("name", "load"), core.Lt("hits", capacity)}, Increment: map[string]int64{"hits": 1}})
		if err != nil || matched {
			t.Errorf("an increment past every cap = %v, %v; want no match", matched, err)
		}
		all, err := e.db.FindMany(e.ctx, counter, []core.Where{core.Eq("name", "load")}, nil)
		mustNoErr(t, err)
		for _, r := range all {
			if r.Int("hits") != capacity {
				t.Errorf("row %d has hits %d, want %d", r.Int("id"), r.Int("hits"), capacity)
			}
		}
	})
}
