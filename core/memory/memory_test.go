package memory_test

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// itemModel has one field of every type, nullable, and a unique string.
func itemModel() core.Model {
	return core.Model{Name: "item", Fields: []driver.Field{
		{Name: "id", Type: driver.TypeInt, Primary: true},
		{Name: "name", Type: driver.TypeString, Unique: true},
		{Name: "n", Type: driver.TypeInt, Nullable: true},
		{Name: "flag", Type: driver.TypeBool, Nullable: true},
		{Name: "at", Type: driver.TypeTime, Nullable: true},
		{Name: "tag", Type: driver.TypeString, Nullable: true},
		{Name: "slot", Type: driver.TypeString, Nullable: true, Unique: true},
	}}
}

var (
	t1 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 = t1.Add(time.Hour)
	t3 = t2.Add(time.Hour)
)

// fixture returns a DB on a fresh store holding items a, b, c, d (ids 1-4);
// c is NULL in every nullable field.
func fixture(t *testing.T) (*core.DB, *memory.Memory, *driver.Table) {
	t.Helper()
	m := memory.New()
	db, err := core.New(m, core.WithSchema(core.MustSchema(core.Naming{}, itemModel())))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []map[string]any{
		{"name": "a", "n": 1, "flag": true, "at": t1, "tag": "x"},
		{"name": "b", "n": 2, "flag": false, "at": t2},
		{"name": "c", "tag": "y"},
		{"name": "d", "n": 3, "flag": true, "at": t3, "tag": "x"},
	} {
		if _, err := db.Create(context.Background(), "item", v); err != nil {
			t.Fatal(err)
		}
	}
	tb, _ := db.Schema().Table("item")
	return db, m, tb
}

// names returns the name of each row, in order.
func names(rows []core.Row) string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Text("name"))
	}
	return strings.Join(out, ",")
}

func TestOperators(t *testing.T) {
	db, _, _ := fixture(t)
	cases := []struct {
		name  string
		where []core.Where
		want  string
	}{
		{"no where matches all", nil, "a,b,c,d"},
		{"eq", []core.Where{core.Eq("n", 2)}, "b"},
		{"eq nil is IS NULL", []core.Where{core.Eq("n", nil)}, "c"},
		{"IsNull", []core.Where{core.IsNull("at")}, "c"},
		{"ne skips NULL", []core.Where{core.Ne("n", 2)}, "a,d"},
		{"ne nil is IS NOT NULL", []core.Where{core.Ne("n", nil)}, "a,b,d"},
		{"IsNotNull", []core.Where{core.IsNotNull("tag")}, "a,c,d"},
		{"lt", []core.Where{core.Lt("n", 2)}, "a"},
		{"lte", []core.Where{core.Lte("n", 2)}, "a,b"},
		{"gt", []core.Where{core.Gt("n", 1)}, "b,d"},
		{"gte", []core.Where{core.Gte("n", 1)}, "a,b,d"},
		{"lt never matches NULL", []core.Where{core.Lt("n", 100)}, "a,b,d"},
		{"gt never matches NULL", []core.Where{core.Gt("n", -100)}, "a,b,d"},
		{"in", []core.Where{core.In("n", 1, 3)}, "a,d"},
		{"in with no hit", []core.Where{core.In("n", 7)}, ""},
		{"not in skips NULL", []core.Where{core.NotIn("n", 1)}, "b,d"},
		{"bool eq true", []core.Where{core.Eq("flag", true)}, "a,d"},
		{"bool eq false", []core.Where{core.Eq("flag", false)}, "b"},
		{"bool ne skips NULL", []core.Where{core.Ne("flag", true)}, "b"},
		{"time lt", []core.Where{core.Lt("at", t2)}, "a"},
		{"time gte", []core.Where{core.Gte("at", t2)}, "b,d"},
		{"time eq in another zone", []core.Where{core.Eq("at", t3.In(time.FixedZone("X", 3600)))}, "d"},
		{"string lt", []core.Where{core.Lt("name", "b")}, "a"},
		{"string gt", []core.Where{core.Gt("name", "b")}, "c,d"},
		{"string ne skips NULL", []core.Where{core.Ne("tag", "x")}, "c"},
		{"string not in skips NULL", []core.Where{core.NotIn("tag", "y")}, "a,d"},
		{"string in", []core.Where{core.In("name", "a", "zz", "d")}, "a,d"},
		{"clauses are ANDed", []core.Where{core.Eq("tag", "x"), core.Gt("n", 1)}, "d"},
		{"contradiction", []core.Where{core.IsNull("n"), core.IsNotNull("n")}, ""},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, err := db.FindMany(ctx, "item", c.where, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(rows); got != c.want {
				t.Errorf("FindMany = %q, want %q", got, c.want)
			}
			n, err := db.Count(ctx, "item", c.where...)
			if err != nil || n != int64(len(rows)) {
				t.Errorf("Count = %d, %v; want %d", n, err, len(rows))
			}
			row, ok, err := db.FindOne(ctx, "item", c.where...)
			first, _, _ := strings.Cut(c.want, ",")
			if err != nil || ok != (c.want != "") || row.Text("name") != first {
				t.Errorf("FindOne = %v, %v, %v; want the lowest id %q", row, ok, err, first)
			}
		})
	}
}

func TestFindManyOptions(t *testing.T) {
	db, _, _ := fixture(t)
	cases := []struct {
		name string
		opts core.FindOptions
		want string
	}{
		{"zero options: id order", core.FindOptions{}, "a,b,c,d"},
		{"sort by int, NULL first", core.FindOptions{SortBy: "n"}, "c,a,b,d"},
		{"sort by int desc, NULL last", core.FindOptions{SortBy: "n", Desc: true}, "d,b,a,c"},
		{"sort by string desc", core.FindOptions{SortBy: "name", Desc: true}, "d,c,b,a"},
		{"ties keep id order", core.FindOptions{SortBy: "tag"}, "b,a,d,c"},
		{"sort by time", core.FindOptions{SortBy: "at", Desc: true}, "d,b,a,c"},
		{"sort by bool", core.FindOptions{SortBy: "flag"}, "c,b,a,d"},
		{"limit", core.FindOptions{Limit: 2}, "a,b"},
		{"offset", core.FindOptions{Offset: 3}, "d"},
		{"offset and limit", core.FindOptions{Offset: 1, Limit: 2}, "b,c"},
		{"sort, offset and limit", core.FindOptions{SortBy: "name", Desc: true, Offset: 1, Limit: 2}, "c,b"},
		{"limit past the end", core.FindOptions{Limit: 10}, "a,b,c,d"},
		{"offset past the end", core.FindOptions{Offset: 10}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, err := db.FindMany(context.Background(), "item", nil, &c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(rows); got != c.want {
				t.Errorf("FindMany = %q, want %q", got, c.want)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	t.Run("Delete removes at most one row, the lowest id", func(t *testing.T) {
		db, _, _ := fixture(t)
		ok, err := db.Delete(ctx, "item", core.Eq("tag", "x"))
		if err != nil || !ok {
			t.Fatalf("Delete = %v, %v", ok, err)
		}
		rows, _ := db.FindMany(ctx, "item", nil, nil)
		if got := names(rows); got != "b,c,d" {
			t.Errorf("left %q, want b,c,d", got)
		}
		if ok, err := db.Delete(ctx, "item", core.Eq("name", "zz")); ok || err != nil {
			t.Errorf("Delete of nothing = %v, %v", ok, err)
		}
	})
	t.Run("DeleteMany removes every match", func(t *testing.T) {
		db, _, _ := fixture(t)
		n, err := db.DeleteMany(ctx, "item", core.Eq("flag", true))
		if err != nil || n != 2 {
			t.Fatalf("DeleteMany = %d, %v; want 2", n, err)
		}
		if left, _ := db.Count(ctx, "item"); left != 2 {
			t.Errorf("%d rows left, want 2", left)
		}
		if n, err := db.DeleteMany(ctx, "item", core.IsNull("n")); n != 1 || err != nil {
			t.Errorf("DeleteMany IS NULL = %d, %v", n, err)
		}
		if n, err := db.DeleteMany(ctx, "item"); n != 1 || err != nil {
			t.Errorf("DeleteMany all = %d, %v", n, err)
		}
	})
}

func TestUniqueConflicts(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		call func(db *core.DB) error
	}{
		{"Create", func(db *core.DB) error { _, err := db.Create(ctx, "item", map[string]any{"name": "a"}); return err }},
		{"Create with a taken id", func(db *core.DB) error {
			_, err := db.Create(ctx, "item", map[string]any{"id": 2, "name": "new"})
			return err
		}},
		{"Update", func(db *core.DB) error {
			_, _, err := db.Update(ctx, "item", []core.Where{core.Eq("name", "b")}, map[string]any{"name": "a"})
			return err
		}},
		{"IncrementOne", func(db *core.DB) error {
			_, _, err := db.IncrementOne(ctx, core.IncrementRequest{Model: "item", Where: []core.Where{core.Eq("name", "b")},
				Increment: map[string]int64{"n": 1}, Set: map[string]any{"name": "c"}})
			return err
		}},
		{"UpdateMany onto one value", func(db *core.DB) error {
			_, err := db.UpdateMany(ctx, "item", []core.Where{core.Eq("tag", "x")}, map[string]any{"slot": "s"})
			return err
		}},
		{"UpdateMany onto a taken value", func(db *core.DB) error {
			_, err := db.UpdateMany(ctx, "item", []core.Where{core.Eq("name", "d")}, map[string]any{"name": "a"})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, _, _ := fixture(t)
			before, _ := db.FindMany(ctx, "item", nil, nil)
			err := c.call(db)
			if !errors.Is(err, core.ErrConflict) {
				t.Fatalf("err = %v, want ErrConflict", err)
			}
			after, _ := db.FindMany(ctx, "item", nil, nil)
			if !reflect.DeepEqual(before, after) {
				t.Errorf("the refused write changed rows:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	t.Run("NULLs never collide", func(t *testing.T) {
		db, _, _ := fixture(t)
		if n, err := db.UpdateMany(ctx, "item", nil, map[string]any{"slot": nil}); n != 4 || err != nil {
			t.Errorf("UpdateMany slot NULL = %d, %v", n, err)
		}
		if _, err := db.Create(ctx, "item", map[string]any{"name": "e"}); err != nil {
			t.Errorf("Create with a NULL slot: %v", err)
		}
	})
	t.Run("a row may keep its own unique value", func(t *testing.T) {
		db, _, _ := fixture(t)
		if _, ok, err := db.Update(ctx, "item", []core.Where{core.Eq("name", "a")}, map[string]any{"name": "a", "n": 5}); !ok || err != nil {
			t.Errorf("Update = %v, %v", ok, err)
		}
	})
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	db, m, tb := fixture(t)
	row, err := db.Create(ctx, "item", map[string]any{"id": 10, "name": "e"})
	if err != nil || row.Int("id") != 10 {
		t.Fatalf("Create with an id = %v, %v", row, err)
	}
	row, err = db.Create(ctx, "item", map[string]any{"name": "f"})
	if err != nil || row.Int("id") != 11 {
		t.Errorf("the next id = %v, %v; want 11", row, err)
	}
	rec, _ := m.FindOne(ctx, tb, cols(core.Eq("name", "f")))
	if !reflect.DeepEqual(rec, driver.Record{"id": int64(11), "name": "f", "n": nil, "flag": nil, "at": nil, "tag": nil, "slot": nil}) {
		t.Errorf("stored %#v", rec)
	}
	rec["name"] = "changed"
	if again, _ := m.FindOne(ctx, tb, cols(core.Eq("id", int64(11)))); again["name"] != "f" {
		t.Error("a returned record shares memory with the store")
	}
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	db, _, _ := fixture(t)
	row, ok, err := db.Update(ctx, "item", []core.Where{core.Eq("tag", "x")}, map[string]any{"n": 9})
	if err != nil || !ok || row.Text("name") != "a" || row.Int("n") != 9 {
		t.Fatalf("Update = %v, %v, %v; want a with n 9", row, ok, err)
	}
	if n, _ := db.Count(ctx, "item", core.Eq("n", 9)); n != 1 {
		t.Errorf("Update changed %d rows, want 1", n)
	}
	if _, ok, err := db.Update(ctx, "item", []core.Where{core.Eq("name", "zz")}, map[string]any{"n": 9}); ok || err != nil {
		t.Errorf("Update of nothing = %v, %v", ok, err)
	}
	n, err := db.UpdateMany(ctx, "item", []core.Where{core.Ne("n", nil)}, map[string]any{"tag": "z"})
	if err != nil || n != 3 {
		t.Errorf("UpdateMany = %d, %v; want 3", n, err)
	}
	// Matched, not changed: rewriting the same values still counts.
	if n, _ := db.UpdateMany(ctx, "item", []core.Where{core.Eq("tag", "z")}, map[string]any{"tag": "z"}); n != 3 {
		t.Errorf("UpdateMany with unchanged values = %d, want 3", n)
	}
}

func TestTransactionRollbackRestoresRows(t *testing.T) {
	ctx := context.Background()
	db, m, tb := fixture(t)
	before, _ := m.FindMany(ctx, tb, nil, driver.FindOptions{})
	err := m.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		if _, err := tx.Create(ctx, tb, []driver.Assignment{{Column: "name", Value: "e"}}); err != nil {
			return err
		}
		if _, err := tx.Update(ctx, tb, cols(core.Eq("name", "a")), []driver.Assignment{{Column: "n", Value: int64(50)}}); err != nil {
			return err
		}
		// Two writes to one row: the rollback must restore the first state.
		if _, err := tx.(driver.Incrementer).IncrementOne(ctx, tb, cols(core.Eq("name", "a")), []driver.Delta{{Column: "n", By: 1}}, nil); err != nil {
			return err
		}
		if _, err := tx.UpdateMany(ctx, tb, nil, []driver.Assignment{{Column: "tag", Value: "q"}}); err != nil {
			return err
		}
		if _, err := tx.Delete(ctx, tb, cols(core.Eq("name", "b"))); err != nil {
			return err
		}
		if _, err := tx.DeleteMany(ctx, tb, cols(core.Eq("flag", true))); err != nil {
			return err
		}
		if n, _ := tx.Count(ctx, tb, nil); n != 2 {
			t.Errorf("inside the transaction: %d rows, want 2", n)
		}
		return errors.New("abort")
	})
	if err == nil || err.Error() != "abort" {
		t.Fatalf("Transaction err = %v, want abort", err)
	}
	after, _ := m.FindMany(ctx, tb, nil, driver.FindOptions{})
	if !reflect.DeepEqual(before, after) {
		t.Errorf("rows not restored:\nbefore %v\nafter  %v", before, after)
	}
	// The id given to the rolled-back insert is not reused, as with a sequence.
	row, err := db.Create(ctx, "item", map[string]any{"name": "e"})
	if err != nil || row.Int("id") != 6 {
		t.Errorf("Create after rollback = %v, %v", row, err)
	}

	t.Run("commit keeps the writes", func(t *testing.T) {
		err := m.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
			_, err := tx.DeleteMany(ctx, tb, nil)
			return err
		})
		if n, _ := m.Count(ctx, tb, nil); err != nil || n != 0 {
			t.Errorf("after commit: %d rows, %v", n, err)
		}
	})
	t.Run("the fallback view's transactions have no IncrementOne", func(t *testing.T) {
		a := m.WithoutIncrementOne()
		if _, ok := a.(driver.Incrementer); ok {
			t.Error("WithoutIncrementOne has IncrementOne")
		}
		err := a.(driver.Transactor).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
			if _, ok := tx.(driver.Incrementer); ok {
				t.Error("its transaction adapter has IncrementOne")
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	})
}

func TestCallsAndContext(t *testing.T) {
	_, m, tb := fixture(t)
	live := context.Background()
	dead, cancel := context.WithCancel(live)
	cancel()
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Create", func(ctx context.Context) error {
			_, err := m.Create(ctx, tb, []driver.Assignment{{Column: "name", Value: "zz"}})
			return err
		}},
		{"FindOne", func(ctx context.Context) error { _, err := m.FindOne(ctx, tb, nil); return err }},
		{"FindMany", func(ctx context.Context) error { _, err := m.FindMany(ctx, tb, nil, driver.FindOptions{}); return err }},
		{"Update", func(ctx context.Context) error {
			_, err := m.Update(ctx, tb, nil, []driver.Assignment{{Column: "n", Value: int64(1)}})
			return err
		}},
		{"UpdateMany", func(ctx context.Context) error {
			_, err := m.UpdateMany(ctx, tb, nil, []driver.Assignment{{Column: "n", Value: int64(1)}})
			return err
		}},
		{"IncrementOne", func(ctx context.Context) error {
			_, err := m.IncrementOne(ctx, tb, nil, []driver.Delta{{Column: "n", By: 1}}, nil)
			return err
		}},
		{"Count", func(ctx context.Context) error { _, err := m.Count(ctx, tb, nil); return err }},
		{"Delete", func(ctx context.Context) error {
			_, err := m.Delete(ctx, tb, cols(core.Eq("name", "nope")))
			return err
		}},
		{"DeleteMany", func(ctx context.Context) error {
			_, err := m.DeleteMany(ctx, tb, cols(core.Eq("name", "nope")))
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			before := m.Calls()
			if err := c.call(dead); !errors.Is(err, context.Canceled) {
				t.Errorf("on a cancelled context: %v", err)
			}
			if err := c.call(live); err != nil {
				t.Errorf("on a live context: %v", err)
			}
			if got := m.Calls() - before; got != 2 {
				t.Errorf("Calls() grew by %d, want 2", got)
			}
		})
	}
}

// TestNativeIncrementRace releases 64 goroutines at once on a guarded
// decrement of a counter of 10, on two tables at once.
func TestNativeIncrementRace(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	db, err := core.New(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{core.ModelRateLimit, core.ModelAPIKey} {
		v := map[string]any{"key": "k", "count": 10}
		if model == core.ModelAPIKey {
			v = map[string]any{"key": "k", "remaining": 10, "referenceId": "u", "createdAt": t1, "updatedAt": t1}
		}
		if _, err := db.Create(ctx, model, v); err != nil {
			t.Fatal(err)
		}
	}
	field := map[string]string{core.ModelRateLimit: "count", core.ModelAPIKey: "remaining"}
	var taken [2]atomic.Int64
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	const callers = 64
	ready.Add(callers)
	done.Add(callers)
	for i := range callers {
		go func() {
			defer done.Done()
			ready.Done()
			<-gate
			model := []string{core.ModelRateLimit, core.ModelAPIKey}[i%2]
			_, ok, err := db.IncrementOne(ctx, core.IncrementRequest{Model: model,
				Where:     []core.Where{core.Eq("key", "k"), core.Gt(field[model], 0)},
				Increment: map[string]int64{field[model]: -1}})
			if err != nil {
				t.Error(err)
			}
			if ok {
				taken[i%2].Add(1)
			}
		}()
	}
	ready.Wait()
	close(gate)
	done.Wait()
	for i, model := range []string{core.ModelRateLimit, core.ModelAPIKey} {
		row, _, err := db.FindOne(ctx, model, core.Eq("key", "k"))
		if err != nil || taken[i].Load() != 10 || row.Int(field[model]) != 0 {
			t.Errorf("%s: %d taken, final %v (%v); want 10 and 0", model, taken[i].Load(), row[field[model]], err)
		}
	}
}

// waitForCalls yields until the store has seen more than n calls: another
// goroutine has entered the adapter.
func waitForCalls(m *memory.Memory, n int64) {
	for m.Calls() <= n {
		runtime.Gosched()
	}
}

// goWaiting runs call in a new goroutine and returns once call has entered
// the store, where it waits for any row the caller's transaction holds.
func goWaiting(m *memory.Memory, call func()) {
	before := m.Calls()
	go call()
	waitForCalls(m, before)
}

// TestRowLocks checks that a transaction's writes lock their rows until it
// ends, so that a rollback never undoes another caller's write.
func TestRowLocks(t *testing.T) {
	t.Run("a write waits for the transaction, then applies on the restored row", testWriteWaitsForTransaction)
	t.Run("a guard is evaluated again after the wait", testGuardReevaluatedAfterWait)
	t.Run("the context ends a wait", testContextEndsWait)
	t.Run("two transactions waiting for each other: one fails with a deadlock", testDeadlockFailsOne)
	t.Run("a transaction adapter is dead after its transaction", testAdapterDeadAfterTransaction)
	t.Run("a panic rolls back and frees the rows", testPanicFreesRows)
}

// incN is a delta of by on the column n.
func incN(by int64) []driver.Delta { return []driver.Delta{{Column: "n", By: by}} }

func testWriteWaitsForTransaction(t *testing.T) {
	ctx := context.Background()
	a := cols(core.Eq("name", "a"))
	_, m, tb := fixture(t) // a has n = 1
	done := make(chan error, 1)
	err := m.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		if _, err := tx.(driver.Incrementer).IncrementOne(ctx, tb, a, incN(10), nil); err != nil {
			return err
		}
		goWaiting(m, func() {
			_, err := m.IncrementOne(ctx, tb, a, incN(100), nil)
			done <- err
		})
		return errors.New("abort")
	})
	if err == nil {
		t.Fatal("the transaction did not fail")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec, _ := m.FindOne(ctx, tb, a)
	if rec["n"] != int64(101) {
		t.Errorf("n = %v, want 101: the rollback must not undo the other write", rec["n"])
	}
}

func testGuardReevaluatedAfterWait(t *testing.T) {
	ctx := context.Background()
	a := cols(core.Eq("name", "a"))
	_, m, tb := fixture(t)
	done := make(chan driver.Record, 1)
	err := m.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		if _, err := tx.Update(ctx, tb, a, []driver.Assignment{{Column: "n", Value: int64(5)}}); err != nil {
			return err
		}
		goWaiting(m, func() {
			// Matches a's value as written by the transaction, which
			// commits a different one.
			rec, _ := m.IncrementOne(ctx, tb, cols(core.Eq("name", "a"), core.Eq("n", int64(5))), incN(1), nil)
			done <- rec
		})
		_, err := tx.Update(ctx, tb, a, []driver.Assignment{{Column: "n", Value: int64(6)}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The waiting write saw the committed n = 6, not the n = 5 it waited on.
	if rec := <-done; rec != nil {
		t.Errorf("the waiting write matched a value that was never committed: %v", rec)
	}
	rec, _ := m.FindOne(ctx, tb, a)
	if rec["n"] != int64(6) {
		t.Errorf("n = %v, want 6", rec["n"])
	}
}

func testContextEndsWait(t *testing.T) {
	ctx := context.Background()
	a := cols(core.Eq("name", "a"))
	_, m, tb := fixture(t)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	err := m.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		if _, err := tx.Update(ctx, tb, a, []driver.Assignment{{Column: "n", Value: int64(5)}}); err != nil {
			return err
		}
		goWaiting(m, func() {
			_, err := m.UpdateMany(wctx, tb, nil, []driver.Assignment{{Column: "tag", Value: "w"}})
			done <- err
		})
		cancel()
		// The waiter must give up while this transaction still holds the row.
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("waiting write: %v, want context.Canceled", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := m.Count(ctx, tb, cols(core.Eq("tag", "w"))); n != 0 {
		t.Errorf("%d rows written by the cancelled call", n)
	}
}

func testDeadlockFailsOne(t *testing.T) {
	ctx := context.Background()
	a, b := cols(core.Eq("name", "a")), cols(core.Eq("name", "b"))
	_, m, tb := fixture(t)
	aLocked, bLocked := make(chan struct{}), make(chan struct{})
	errs := make(chan error, 2)
	go func() {
		errs <- m.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
			if _, err := tx.Update(ctx, tb, a, []driver.Assignment{{Column: "tag", Value: "1"}}); err != nil {
				return err
			}
			close(aLocked)
			<-bLocked
			_, err := tx.Update(ctx, tb, b, []driver.Assignment{{Column: "tag", Value: "1"}})
			return err
		})
	}()
	go func() {
		errs <- m.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
			<-aLocked
			if _, err := tx.Update(ctx, tb, b, []driver.Assignment{{Column: "tag", Value: "2"}}); err != nil {
				return err
			}
			close(bLocked)
			_, err := tx.Update(ctx, tb, a, []driver.Assignment{{Column: "tag", Value: "2"}})
			return err
		})
	}()
	var deadlocks, commits int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			commits++
		case strings.Contains(err.Error(), "deadlock"):
			deadlocks++
		default:
			t.Errorf("transaction: %v", err)
		}
	}
	if deadlocks != 1 || commits != 1 {
		t.Fatalf("%d deadlocks and %d commits, want 1 and 1", deadlocks, commits)
	}
	ra, _ := m.FindOne(ctx, tb, a)
	rb, _ := m.FindOne(ctx, tb, b)
	if ra["tag"] != rb["tag"] {
		t.Errorf("tags %v and %v: the winner's two writes must both stand, the loser's neither", ra["tag"], rb["tag"])
	}
}

func testAdapterDeadAfterTransaction(t *testing.T) {
	ctx := context.Background()
	a := cols(core.Eq("name", "a"))
	_, m, tb := fixture(t)
	var leaked driver.Adapter
	if err := m.Transaction(ctx, func(_ context.Context, tx driver.Adapter) error { leaked = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := leaked.Update(ctx, tb, a, []driver.Assignment{{Column: "n", Value: int64(0)}}); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("write through an ended transaction: %v", err)
	}
	if _, err := m.Update(ctx, tb, a, []driver.Assignment{{Column: "n", Value: int64(0)}}); err != nil {
		t.Errorf("the row stayed locked: %v", err)
	}
}

func testPanicFreesRows(t *testing.T) {
	ctx := context.Background()
	a := cols(core.Eq("name", "a"))
	_, m, tb := fixture(t)
	func() {
		defer func() { _ = recover() }()
		_ = m.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
			if _, err := tx.Update(ctx, tb, a, []driver.Assignment{{Column: "n", Value: int64(77)}}); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	rec, err := m.IncrementOne(ctx, tb, a, incN(1), nil)
	if err != nil || rec["n"] != int64(2) {
		t.Errorf("after the panic: %v, %v; want n = 2", rec, err)
	}
}

// cols turns where clauses on fields into clauses on the columns of the
// same names, as an adapter receives them.
func cols(where ...core.Where) []driver.Where {
	out := make([]driver.Where, len(where))
	for i, w := range where {
		out[i] = driver.Where{Column: w.Field, Op: w.Op, Value: w.Value}
	}
	return out
}
