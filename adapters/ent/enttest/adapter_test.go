package enttest_test

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
	"github.com/sluice-go/sluice/core/driver"
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
}

// renamed is a driver that reports another dialect name, as instrumented
// drivers ("postgres+otel") and mistaken ones do.
type renamed struct {
	dialect.Driver
	name string
}

func (r renamed) Dialect() string { return r.name }

// TestDialectNames checks, on every server, which dialect names New and
// NewTx accept: ent's, instrumented ones, "sqlite" for "sqlite3"; and that
// a name of another dialect than the server's is refused at open.
func TestDialectNames(t *testing.T) {
	forEach(t, allBackends(), func(t *testing.T, e *env) {
		names := []string{e.b.dialect, e.b.dialect + "+otel"}
		if e.b.dialect == dialect.SQLite {
			names = append(names, "sqlite")
		}
		for _, name := range names {
			a, err := sluiceent.New(renamed{e.drv, name})
			if err != nil || a.Dialect() != e.b.dialect {
				t.Errorf("New(driver named %q) = %v; want dialect %q", name, err, e.b.dialect)
			}
			tx, err := e.drv.Tx(e.ctx)
			mustNoErr(t, err)
			a, err = sluiceent.NewTx(tx, name)
			if err != nil || a.Dialect() != e.b.dialect {
				t.Errorf("NewTx(_, %q) = %v; want dialect %q", name, err, e.b.dialect)
			}
			mustNoErr(t, tx.Rollback())
		}
		for _, other := range []string{dialect.Postgres, dialect.MySQL, dialect.SQLite} {
			if other == e.b.dialect {
				continue
			}
			if _, err := sluiceent.New(renamed{e.drv, other}); err == nil {
				t.Errorf("New(a %s server named %q) succeeded, want the mismatch refused", e.b.name, other)
			}
		}
	})
}

// txDriver is what a generated ent.Tx hands its builders (ent's
// entc/gen template "txDriver"): a dialect.Driver that is also a
// dialect.Tx, whose Tx returns itself and whose Commit and Rollback do
// nothing, since ent.Tx's own Commit and Rollback end the transaction.
type txDriver struct {
	drv dialect.Driver
	tx  dialect.Tx
}

func (d *txDriver) Exec(ctx context.Context, q string, args, v any) error {
	return d.tx.Exec(ctx, q, args, v)
}
func (d *txDriver) Query(ctx context.Context, q string, args, v any) error {
	return d.tx.Query(ctx, q, args, v)
}
func (d *txDriver) Tx(context.Context) (dialect.Tx, error) { return d, nil }
func (d *txDriver) Dialect() string                        { return d.drv.Dialect() }
func (*txDriver) Close() error                             { return nil }
func (*txDriver) Commit() error                            { return nil }
func (*txDriver) Rollback() error                          { return nil }

// TestUnwrap checks the escape hatch: the driver at the top level, the
// transaction inside one (the engine's or the caller's).
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
	err = d.Transaction(e.ctx, func(ctx context.Context, tx driver.Adapter) error {
		if got, ok := tx.(driver.Unwrapper).Unwrap().(*dialect.DebugTx); !ok {
			t.Errorf("Unwrap() in Transaction = %T, want the driver's transaction (*dialect.DebugTx)", got)
		}
		return nil
	})
	mustNoErr(t, err)

	tx, err := e.drv.Tx(e.ctx)
	mustNoErr(t, err)
	defer tx.Rollback()
	if got := a.WithTx(tx).Unwrap(); got != tx {
		t.Errorf("WithTx(tx).Unwrap() = %T, want the transaction", got)
	}
	err = a.WithTx(tx).Transaction(e.ctx, func(ctx context.Context, inner driver.Adapter) error {
		if got := inner.(driver.Unwrapper).Unwrap(); got != tx {
			t.Errorf("Unwrap() in a savepoint of WithTx(tx) = %T, want the transaction", got)
		}
		return nil
	})
	mustNoErr(t, err)
	txa, err := sluiceent.NewTx(tx, dialect.SQLite)
	mustNoErr(t, err)
	if got := txa.Unwrap(); got != tx {
		t.Errorf("NewTx(tx).Unwrap() = %T, want the transaction", got)
	}
	entTx := &txDriver{drv: e.drv, tx: tx}
	g, err := sluiceent.New(entTx)
	mustNoErr(t, err)
	if got := g.Unwrap(); got != entTx {
		t.Errorf("New(ent.Tx's driver).Unwrap() = %T, want that driver", got)
	}
}

// TestDriverSeesStatements checks that every statement sluice runs goes
// through the ent driver, so that ent's DebugDriver (and any other driver
// wrapper: tracing, metrics) sees it, transactions included.
func TestDriverSeesStatements(t *testing.T) {
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
		table := e.table(t, counter).Name
		run := func(op func() error) []string {
			t.Helper()
			mu.Lock()
			log = nil
			mu.Unlock()
			mustNoErr(t, op())
			mu.Lock()
			defer mu.Unlock()
			return log
		}
		mentions := func(lines []string, words ...string) bool {
			for _, l := range lines {
				ok := true
				for _, w := range words {
					ok = ok && strings.Contains(l, w)
				}
				if ok {
					return true
				}
			}
			return false
		}
		var id int64
		got := run(func() error {
			row, err := db.Create(e.ctx, counter, map[string]any{"name": "s"})
			id = row.Int("id")
			return err
		})
		if !mentions(got, "INSERT", table) {
			t.Errorf("Create: the driver saw no INSERT into %s:\n%s", table, strings.Join(got, "\n"))
		}
		got = run(func() error {
			_, ok, err := db.IncrementOne(e.ctx, core.IncrementRequest{Model: counter,
				Where: []core.Where{core.Eq("id", id)}, Increment: map[string]int64{"hits": 1}})
			if err == nil && !ok {
				err = errors.New("IncrementOne did not match")
			}
			return err
		})
		if !mentions(got, "UPDATE", table) {
			t.Errorf("IncrementOne: the driver saw no UPDATE of %s:\n%s", table, strings.Join(got, "\n"))
		}
		got = run(func() error {
			_, _, err := db.FindOne(e.ctx, counter, core.Eq("id", id))
			return err
		})
		if !mentions(got, "SELECT", table) {
			t.Errorf("FindOne: the driver saw no SELECT from %s:\n%s", table, strings.Join(got, "\n"))
		}
		got = run(func() error {
			return db.InTx(e.ctx, func(ctx context.Context, tx *core.DB) error {
				_, err := tx.Create(ctx, counter, map[string]any{"name": "in-tx"})
				return err
			})
		})
		if !mentions(got, "started") || !mentions(got, "Tx(", "INSERT", table) || !mentions(got, "committed") {
			t.Errorf("InTx: the driver did not see begin, INSERT in the transaction, commit:\n%s", strings.Join(got, "\n"))
		}
		got = run(func() error {
			err := db.InTx(e.ctx, func(ctx context.Context, tx *core.DB) error { return errTest })
			if errors.Is(err, errTest) {
				return nil
			}
			return fmt.Errorf("InTx = %v, want the function's error", err)
		})
		if !mentions(got, "Tx(", "rollback") { // ent logs "Tx(id): rollbacked"
			t.Errorf("InTx failing: the driver did not see the rollback:\n%s", strings.Join(got, "\n"))
		}
	})
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

// userTx is one way to run sluice in a transaction the caller began on the
// ent driver; each returns the core.DB bound to it and the transaction.
type userTx struct {
	name string
	bind func(t *testing.T, e *env, a *sluiceent.Adapter, tx dialect.Tx) *core.DB
}

var userTxs = []userTx{
	{"WithTx", func(t *testing.T, e *env, a *sluiceent.Adapter, tx dialect.Tx) *core.DB {
		db, err := core.New(a.WithTx(tx), core.WithSchema(e.schema))
		mustNoErr(t, err)
		return db
	}},
	{"NewTx", func(t *testing.T, e *env, _ *sluiceent.Adapter, tx dialect.Tx) *core.DB {
		a, err := sluiceent.NewTx(tx, e.b.dialect)
		mustNoErr(t, err)
		db, err := core.New(a, core.WithSchema(e.schema))
		mustNoErr(t, err)
		return db
	}},
	{"ent.Tx driver", func(t *testing.T, e *env, _ *sluiceent.Adapter, tx dialect.Tx) *core.DB {
		db, err := sluiceent.Open(&txDriver{drv: e.drv, tx: tx}, core.WithSchema(e.schema))
		mustNoErr(t, err)
		return db
	}},
}

// TestUserTransaction runs sluice inside a transaction the caller began on
// the ent driver: its writes commit or roll back with the caller's, and an
// InTx inside it is a savepoint: its error undoes its own writes only,
// and the caller's transaction goes on.
func TestUserTransaction(t *testing.T) {
	forEach(t, allBackends(), func(t *testing.T, e *env) {
		a, err := sluiceent.New(e.drv)
		mustNoErr(t, err)
		for _, u := range userTxs {
			t.Run(u.name, func(t *testing.T) {
				row := newCounter(t, e, e.db, map[string]any{"name": "tx " + u.name, "hits": 0})
				where := []core.Where{core.Eq("id", row.Int("id"))}
				inner := "inner " + u.name
				for _, commit := range []bool{false, true} {
					tx, err := e.drv.Tx(e.ctx)
					mustNoErr(t, err)
					txdb := u.bind(t, e, a, tx)
					_, ok, err := txdb.IncrementOne(e.ctx, core.IncrementRequest{Model: counter, Where: where, Increment: map[string]int64{"hits": 1}})
					if err != nil || !ok {
						t.Fatalf("IncrementOne in the caller's transaction: %v, %v", ok, err)
					}
					err = txdb.InTx(e.ctx, func(ctx context.Context, in *core.DB) error {
						_, err := in.Create(ctx, counter, map[string]any{"name": inner})
						return err
					})
					mustNoErr(t, err)
					err = txdb.InTx(e.ctx, func(ctx context.Context, in *core.DB) error {
						if _, err := in.Create(ctx, counter, map[string]any{"name": inner}); err != nil {
							return err
						}
						if _, _, err := in.IncrementOne(ctx, core.IncrementRequest{Model: counter, Where: where, Increment: map[string]int64{"hits": 100}}); err != nil {
							return err
						}
						return errTest
					})
					if !errors.Is(err, errTest) {
						t.Fatalf("a failing InTx in the caller's transaction = %v, want its error", err)
					}
					n, err := txdb.Count(e.ctx, counter, core.Eq("name", inner))
					mustNoErr(t, err)
					got, _, err := txdb.FindOne(e.ctx, counter, where...)
					mustNoErr(t, err)
					if n != 1 || got.Int("hits") != row.Int("hits")+1 {
						t.Fatalf("after the failed savepoint, in the transaction: %d inner rows and hits %d; want 1 and %d",
							n, got.Int("hits"), row.Int("hits")+1)
					}
					if commit {
						mustNoErr(t, tx.Commit())
					} else {
						mustNoErr(t, tx.Rollback())
					}
				}
				got, _, err := e.db.FindOne(e.ctx, counter, where...)
				mustNoErr(t, err)
				n, err := e.db.Count(e.ctx, counter, core.Eq("name", inner))
				mustNoErr(t, err)
				if got.Int("hits") != 1 || n != 1 {
					t.Errorf("after a rollback and a commit: hits %d, inner rows %d; want 1 and 1", got.Int("hits"), n)
				}
			})
		}

		// The adapter's own transactions: an error rolls back, and a nested
		// InTx is a savepoint.
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
		err = e.db.InTx(e.ctx, func(ctx context.Context, tx *core.DB) error {
			if _, err := tx.Create(ctx, counter, map[string]any{"name": "outer"}); err != nil {
				return err
			}
			err := tx.InTx(ctx, func(ctx context.Context, in *core.DB) error {
				if _, err := in.Create(ctx, counter, map[string]any{"name": "nested"}); err != nil {
					return err
				}
				return errTest
			})
			if !errors.Is(err, errTest) {
				return fmt.Errorf("nested InTx = %v, want its error", err)
			}
			return nil
		})
		mustNoErr(t, err)
		outer, _ := e.db.Count(e.ctx, counter, core.Eq("name", "outer"))
		nested, _ := e.db.Count(e.ctx, counter, core.Eq("name", "nested"))
		if outer != 1 || nested != 0 {
			t.Errorf("after a failed nested InTx: %d outer and %d nested rows, want 1 and 0", outer, nested)
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

// TestTimes checks that times go in as UTC (text in driver.FormatTime on
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
				t.Errorf("SQLite stored %q, want driver.FormatTime text", raw)
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
