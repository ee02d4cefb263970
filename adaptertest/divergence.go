package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// errNoNesting ends the probe transaction of caseNestedTransaction when the
// transaction adapter does not implement driver.Transactor.
var errNoNesting = errors.New("the transaction adapter does not implement driver.Transactor")

// problems collects what went wrong inside a transaction's fn, whose
// failure must be an error it returns rather than a stopped test: the
// adapter then rolls back as it would for any error.
type problems []string

func (p *problems) check(ok bool, format string, args ...any) {
	if !ok {
		*p = append(*p, fmt.Sprintf(format, args...))
	}
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return errors.New(strings.Join(p, "; "))
}

// countWhere counts rows through an adapter, failing the check on error.
func countWhere(ctx context.Context, p *problems, a driver.Adapter, tb *driver.Table, what string, where ...core.Where) int64 {
	n, err := a.Count(ctx, tb, cols(where...))
	p.check(err == nil, "Count %s: %v", what, err)
	return n
}

// cols turns clauses on column names, written with core's helpers, into
// the clauses an adapter receives.
func cols(where ...core.Where) []driver.Where {
	out := make([]driver.Where, len(where))
	for i, w := range where {
		out[i] = driver.Where{Column: w.Field, Op: w.Op, Value: w.Value}
	}
	return out
}

// counterTable returns the counter model's table and the physical column
// name of a field, for cases that call the adapter directly.
func counterTable(t testing.TB, f *Fixture) (*driver.Table, func(field string) string) {
	t.Helper()
	tb, ok := f.Schema.Table(counterModel)
	require.True(t, ok)
	return tb, func(field string) string {
		c, ok := tb.Column(field)
		require.True(t, ok, "field %s", field)
		return c.Name
	}
}

const ruleNestedTransaction = "a transaction adapter that implements driver.Transactor opens a nested transaction (a savepoint): when the nested fn returns an error, only the writes made inside it roll back, the enclosing transaction goes on and commits its own writes, and a nested fn that returns nil keeps its writes"

func caseNestedTransaction(t testing.TB, f *Fixture) {
	ctx := f.Ctx
	tb, col := counterTable(t, f)
	r := newCounter(t, f, "nest", map[string]any{"hits": 1})
	victim := newCounter(t, f, "victim", nil)
	id, name, hits := col("id"), col("name"), col("hits")
	boom := errors.New("boom")
	err := f.Adapter.(driver.Transactor).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		var p problems
		if _, err := tx.Create(ctx, tb, []driver.Assignment{{Column: name, Value: "outer"}}); err != nil {
			return err
		}
		if _, err := tx.Update(ctx, tb, cols(core.Eq(id, r.Int("id"))), []driver.Assignment{{Column: hits, Value: int64(2)}}); err != nil {
			return err
		}
		nested, ok := tx.(driver.Transactor)
		if !ok {
			return errNoNesting
		}
		err := nested.Transaction(ctx, func(ctx context.Context, inner driver.Adapter) error {
			if _, err := inner.Create(ctx, tb, []driver.Assignment{{Column: name, Value: "inner"}}); err != nil {
				return err
			}
			// the row the outer transaction changed, changed again
			if _, err := inner.Update(ctx, tb, cols(core.Eq(id, r.Int("id"))), []driver.Assignment{{Column: hits, Value: int64(50)}}); err != nil {
				return err
			}
			if _, err := inner.Delete(ctx, tb, cols(core.Eq(id, victim.Int("id")))); err != nil {
				return err
			}
			var q problems
			q.check(countWhere(ctx, &q, inner, tb, "inside the nested transaction", core.Eq(name, "inner")) == 1, "the nested transaction does not see its own row")
			if err := q.err(); err != nil {
				return err
			}
			return boom
		})
		p.check(errors.Is(err, boom), "the nested Transaction returned %v, want the error its fn returned", err)
		p.check(countWhere(ctx, &p, tx, tb, "inner", core.Eq(name, "inner")) == 0, "after the nested rollback the outer transaction still sees the nested row")
		p.check(countWhere(ctx, &p, tx, tb, "hits", core.Eq(id, r.Int("id")), core.Eq(hits, int64(2))) == 1, "after the nested rollback the row does not hold the outer transaction's hits = 2")
		p.check(countWhere(ctx, &p, tx, tb, "victim", core.Eq(id, victim.Int("id"))) == 1, "after the nested rollback the row the nested transaction deleted is still gone")
		err = nested.Transaction(ctx, func(ctx context.Context, inner driver.Adapter) error {
			_, err := inner.Create(ctx, tb, []driver.Assignment{{Column: name, Value: "kept"}})
			return err
		})
		p.check(err == nil, "a nested Transaction whose fn returned nil failed: %v", err)
		if _, err := tx.Create(ctx, tb, []driver.Assignment{{Column: name, Value: "last"}}); err != nil {
			p.check(false, "the outer transaction is unusable after a nested rollback: %v", err)
		}
		return p.err()
	})
	if errors.Is(err, errNoNesting) {
		t.Skip("the transaction adapter does not implement driver.Transactor: nested transactions are unsupported, and InTx refuses them")
	}
	require.NoError(t, err, "the outer transaction")
	for _, want := range []struct {
		name string
		n    int64
	}{{"outer", 1}, {"kept", 1}, {"last", 1}, {"inner", 0}, {"victim", 1}} {
		n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("name", want.name))
		require.NoError(t, err)
		assert.Equal(t, want.n, n, "committed rows named %q", want.name)
	}
	assert.EqualValues(t, 2, reread(t, f, counterModel, r.Int("id")).Int("hits"), "the outer write committed, the nested one rolled back")
}

// txNests reports whether the adapter's transaction adapter implements
// driver.Transactor.
func txNests(t testing.TB, f *Fixture) bool {
	t.Helper()
	var nests bool
	err := f.Adapter.(driver.Transactor).Transaction(f.Ctx, func(_ context.Context, tx driver.Adapter) error {
		_, nests = tx.(driver.Transactor)
		return nil
	})
	require.NoError(t, err, "an empty transaction")
	return nests
}

const ruleNestedInTx = "InTx called on a transaction's DB runs a nested transaction: an error from the inner fn rolls back the inner writes, IncrementOne included, and nothing else, and the outer transaction commits; a transaction adapter without driver.Transactor makes the nested InTx fail with ErrUnsupported before calling fn"

func caseNestedInTx(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "nest", map[string]any{"hits": 1})
	nests := txNests(t, f)
	boom := errors.New("boom")
	err := f.DB.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
		var p problems
		if _, err := tx.Create(ctx, counterModel, map[string]any{"name": "outer"}); err != nil {
			return err
		}
		if _, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: counterModel,
			Where: []core.Where{core.Eq("id", r.Int("id"))}, Increment: map[string]int64{"hits": 1}}); err != nil || !ok {
			return fmt.Errorf("outer IncrementOne: ok=%v err=%v", ok, err)
		}
		called := false
		err := tx.InTx(ctx, func(ctx context.Context, inner *core.DB) error {
			called = true
			if _, err := inner.Create(ctx, counterModel, map[string]any{"name": "inner"}); err != nil {
				return err
			}
			if _, ok, err := inner.IncrementOne(ctx, core.IncrementRequest{Model: counterModel,
				Where: []core.Where{core.Eq("id", r.Int("id"))}, Increment: map[string]int64{"hits": 100}, Set: map[string]any{"label": "inner"}}); err != nil || !ok {
				return fmt.Errorf("inner IncrementOne: ok=%v err=%v", ok, err)
			}
			return boom
		})
		if nests {
			p.check(errors.Is(err, boom), "the nested InTx returned %v, want the error its fn returned", err)
		} else {
			p.check(errors.Is(err, core.ErrUnsupported) && !called, "without nested transactions, the nested InTx returned %v (fn called: %v), want ErrUnsupported before fn", err, called)
		}
		seen, ok, err := tx.FindOne(ctx, counterModel, core.Eq("id", r.Int("id")))
		p.check(err == nil && ok && seen.Int("hits") == 2 && seen.IsNull("label"),
			"after the nested rollback the outer transaction reads %v (ok=%v err=%v), want hits 2 and no label", seen, ok, err)
		if _, err := tx.Create(ctx, counterModel, map[string]any{"name": "after"}); err != nil {
			p.check(false, "the outer transaction is unusable after the nested one: %v", err)
		}
		return p.err()
	})
	require.NoError(t, err, "the outer transaction")
	for _, want := range []struct {
		name string
		n    int64
	}{{"outer", 1}, {"after", 1}, {"inner", 0}} {
		n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("name", want.name))
		require.NoError(t, err)
		assert.Equal(t, want.n, n, "committed rows named %q", want.name)
	}
	row := reread(t, f, counterModel, r.Int("id"))
	assert.EqualValues(t, 2, row.Int("hits"), "the outer increment committed, the inner one rolled back")
	assert.True(t, row.IsNull("label"), "the inner Set survived its rollback: label %v", row["label"])
}

// unstorable are strings no adapter may be handed: invalid UTF-8 (which
// some drivers rewrite to U+FFFD, merging distinct keys) and NUL.
var unstorable = []string{"a\xff\xfe", "a\xfe\xff", "\xc3\x28", "ok\xc3", "\xed\xa0\x80", "k\x00", "\x00"}

const ruleUnstorableStrings = "a string that is not valid UTF-8 or contains NUL is refused with ErrInvalid, naming the field, before anything reaches the adapter, wherever it is given (Create, Set, Update, where): nothing is stored, on every adapter"

func caseUnstorableStrings(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "valid", map[string]any{"label": "l"})
	id := core.Eq("id", r.Int("id"))
	spy := &noIO{}
	spyDB, err := core.New(spy, core.WithSchema(f.Schema))
	require.NoError(t, err)
	for _, s := range unstorable {
		calls := []struct {
			what, field string
			call        func(db *core.DB) error
		}{
			{"Create", "name", func(db *core.DB) error {
				_, err := db.Create(f.Ctx, counterModel, map[string]any{"name": s})
				return err
			}},
			{"Create rateLimit", "key", func(db *core.DB) error {
				_, err := db.Create(f.Ctx, core.ModelRateLimit, map[string]any{"key": s})
				return err
			}},
			{"IncrementOne Set", "label", func(db *core.DB) error {
				_, _, err := db.IncrementOne(f.Ctx, core.IncrementRequest{Model: counterModel, Where: []core.Where{id},
					Increment: map[string]int64{"hits": 1}, Set: map[string]any{"label": s}})
				return err
			}},
			{"IncrementOne where", "name", func(db *core.DB) error {
				_, _, err := db.IncrementOne(f.Ctx, core.IncrementRequest{Model: counterModel, Where: []core.Where{core.Eq("name", s)},
					Increment: map[string]int64{"hits": 1}})
				return err
			}},
			{"Update", "slot", func(db *core.DB) error {
				_, _, err := db.Update(f.Ctx, counterModel, []core.Where{id}, map[string]any{"slot": s})
				return err
			}},
			{"UpdateMany", "label", func(db *core.DB) error {
				_, err := db.UpdateMany(f.Ctx, counterModel, nil, map[string]any{"label": s})
				return err
			}},
			{"FindOne", "label", func(db *core.DB) error {
				_, _, err := db.FindOne(f.Ctx, counterModel, core.In("label", "l", s))
				return err
			}},
			{"DeleteMany", "name", func(db *core.DB) error {
				_, err := db.DeleteMany(f.Ctx, counterModel, core.Ne("name", s))
				return err
			}},
		}
		for _, c := range calls {
			for _, db := range []*core.DB{spyDB, f.DB} {
				err := c.call(db)
				require.ErrorIs(t, err, core.ErrInvalid, "%s with %q", c.what, s)
				assert.Contains(t, err.Error(), fmt.Sprintf("%q", c.field), "%s with %q: the error should name the field", c.what, s)
			}
		}
	}
	assert.Zero(t, spy.calls.Load(), "requests with unstorable strings reached the adapter")
	n, err := f.DB.Count(f.Ctx, counterModel)
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "rows stored")
	n, err = f.DB.Count(f.Ctx, core.ModelRateLimit)
	require.NoError(t, err)
	assert.Zero(t, n, "rate-limit rows stored")
	requireSame(t, r, reread(t, f, counterModel, r.Int("id")), "a refused request changed the row")
}

// distinctKeys differ from "k" (or from each other) in ways a collation
// may ignore: trailing spaces (PAD SPACE), case, Unicode normalisation
// (precomposed é against e + combining acute), width (fullwidth k), and
// 4-byte UTF-8 that a 3-byte charset cannot hold.
var distinctKeys = []string{"k", "k ", "k  ", "K", " k", "\u00e9", "e\u0301", "\uff4b", "k\U0001F600", "k\U0001F601", "\u00df", "ss", "\uFFFD"}

const ruleDistinctStrings = "strings are stored and compared byte for byte: keys that differ only by trailing spaces, by case, by Unicode normalisation or by width are distinct rows under a unique index, each matched only by itself, and every one round-trips unchanged"

func caseDistinctStrings(t testing.TB, f *Fixture) {
	ids := map[string]int64{}
	for i, k := range distinctKeys {
		row, err := f.DB.Create(f.Ctx, core.ModelRateLimit, map[string]any{"key": k, "count": i})
		require.NoError(t, err, "Create key %+q next to %+q: they are distinct keys", k, distinctKeys[:i])
		assert.Equal(t, k, row.Text("key"), "Create returned the key changed")
		ids[k] = row.Int("id")
		newCounter(t, f, k, map[string]any{"slot": k, "hits": i})
	}
	// each key's counter moves on its own
	for i, k := range distinctKeys {
		row := requireWriteModel(t, f, core.ModelRateLimit, []core.Where{core.Eq("key", k)}, map[string]int64{"count": 100})
		assert.Equal(t, ids[k], row.Int("id"), "IncrementOne(key = %q) changed another key's row %q", k, row.Text("key"))
		assert.EqualValues(t, 100+i, row.Int("count"), "key %q", k)
	}
	for i, k := range distinctKeys {
		rows, err := f.DB.FindMany(f.Ctx, core.ModelRateLimit, []core.Where{core.Eq("key", k)}, nil)
		require.NoError(t, err)
		if assert.Len(t, rows, 1, "rows matching key = %q", k) {
			assert.Equal(t, k, rows[0].Text("key"), "the key does not round-trip byte for byte")
			assert.EqualValues(t, 100+i, rows[0].Int("count"), "key %q", k)
		}
		n, err := f.DB.Count(f.Ctx, core.ModelRateLimit, core.In("key", k, "absent"))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "rows matching key in (%q)", k)
		n, err = f.DB.Count(f.Ctx, counterModel, core.Eq("name", k))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "counters named %q (an indexed, non-unique string)", k)
		row, ok, err := f.DB.FindOne(f.Ctx, counterModel, core.Eq("slot", k))
		require.NoError(t, err)
		if assert.True(t, ok, "slot %q", k) {
			assert.Equal(t, k, row.Text("name"), "the name does not round-trip byte for byte")
			assert.EqualValues(t, i, row.Int("hits"), "FindOne(slot = %q) found another row", k)
		}
	}
	n, err := f.DB.Count(f.Ctx, core.ModelRateLimit)
	require.NoError(t, err)
	assert.EqualValues(t, len(distinctKeys), n, "rate-limit rows")
}

// requireWriteModel runs IncrementOne on any model and requires a match.
func requireWriteModel(t testing.TB, f *Fixture, model string, where []core.Where, inc map[string]int64) core.Row {
	t.Helper()
	row, ok, err := f.DB.IncrementOne(f.Ctx, core.IncrementRequest{Model: model, Where: where, Increment: inc})
	require.NoError(t, err)
	require.True(t, ok, "IncrementOne(where %v) matched nothing", where)
	return row
}

const ruleIncrementOverflow = "an IncrementOne whose delta would take an int column past MaxInt64 or below MinInt64 fails with ErrInvalid and leaves the row as it was (no wrap-around, no change of the column's type, no partial write); the limits themselves can be reached"

func caseIncrementOverflow(t testing.TB, f *Fixture) {
	attempts := []struct {
		start, by int64
		ok        bool
	}{
		{math.MaxInt64 - 1, 2, false},
		{math.MaxInt64 - 1, math.MaxInt64, false},
		{math.MaxInt64 - 1, 1, true}, // reaches MaxInt64
		{math.MaxInt64, 1, false},
		{math.MinInt64 + 1, -2, false},
		{math.MinInt64 + 1, math.MinInt64, false},
		{math.MinInt64 + 1, -1, true}, // reaches MinInt64
		{-1, math.MinInt64, false},
		{0, math.MinInt64, true},
		{5, math.MinInt64, true},
		{math.MinInt64, math.MaxInt64, true},
	}
	for _, a := range attempts {
		r := newCounter(t, f, fmt.Sprintf("%d%+d", a.start, a.by), map[string]any{"hits": a.start, "budget": 7})
		row, ok, err := increment(f, []core.Where{core.Eq("id", r.Int("id"))}, map[string]int64{"hits": a.by, "budget": 1}, map[string]any{"label": "written"})
		if a.ok {
			require.NoError(t, err, "%d + %d", a.start, a.by)
			require.True(t, ok)
			assert.Equal(t, a.start+a.by, row.Int("hits"), "%d + %d", a.start, a.by)
			continue
		}
		require.ErrorIs(t, err, core.ErrInvalid, "%d + %d overflows int64", a.start, a.by)
		assert.NotErrorIs(t, err, core.ErrContention)
		assert.NotErrorIs(t, err, core.ErrConflict)
		assert.False(t, ok)
		requireSame(t, r, reread(t, f, counterModel, r.Int("id")), fmt.Sprintf("the refused %d + %d changed the row", a.start, a.by))
	}
	// a second delta that overflows refuses the whole write
	r := newCounter(t, f, "pair", map[string]any{"hits": 5, "budget": math.MaxInt64})
	_, _, err := increment(f, []core.Where{core.Eq("id", r.Int("id"))}, map[string]int64{"hits": 1, "budget": 1}, map[string]any{"label": "written"})
	require.ErrorIs(t, err, core.ErrInvalid, "budget %d + 1", int64(math.MaxInt64))
	requireSame(t, r, reread(t, f, counterModel, r.Int("id")), "the refused write applied part of itself")
	// every row still reads back as an integer, and the column still adds exactly
	rows, err := f.DB.FindMany(f.Ctx, counterModel, nil, nil)
	require.NoError(t, err, "reading the table after refused overflows")
	assert.Len(t, rows, len(attempts)+1)
	row := requireWrite(t, f, []core.Where{core.Eq("id", r.Int("id"))}, map[string]int64{"hits": 1 << 53, "budget": -1}, nil)
	assert.Equal(t, int64(5+1<<53), row.Int("hits"), "integer arithmetic after refused overflows")
	assert.Equal(t, int64(math.MaxInt64-1), row.Int("budget"))
}

const ruleConflictInTx = "inside InTx, a duplicate unique key fails that one call with ErrConflict (Create, Update and IncrementOne alike) and leaves the transaction usable: its other writes, before and after the conflict, commit"

func caseConflictInTx(t testing.TB, f *Fixture) {
	taken := newCounter(t, f, "taken", map[string]any{"slot": "taken"})
	_, err := f.DB.Create(f.Ctx, core.ModelRateLimit, map[string]any{"key": "k", "count": 1})
	require.NoError(t, err)
	var before, after int64
	err = f.DB.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
		var p problems
		b, err := tx.Create(ctx, counterModel, map[string]any{"name": "before"})
		if err != nil {
			return err
		}
		before = b.Int("id")
		_, err = tx.Create(ctx, counterModel, map[string]any{"name": "dup", "slot": "taken"})
		p.check(errors.Is(err, core.ErrConflict), "Create with a taken slot: %v, want ErrConflict", err)
		_, err = tx.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k"})
		p.check(errors.Is(err, core.ErrConflict), "Create with a taken rate-limit key: %v, want ErrConflict", err)
		_, _, err = tx.Update(ctx, counterModel, []core.Where{core.Eq("id", before)}, map[string]any{"slot": "taken"})
		p.check(errors.Is(err, core.ErrConflict), "Update to a taken slot: %v, want ErrConflict", err)
		_, _, err = tx.IncrementOne(ctx, core.IncrementRequest{Model: counterModel, Where: []core.Where{core.Eq("id", before)},
			Increment: map[string]int64{"hits": 1}, Set: map[string]any{"slot": "taken"}})
		p.check(errors.Is(err, core.ErrConflict), "IncrementOne setting a taken slot: %v, want ErrConflict", err)
		// the transaction goes on: the limiter's create-or-increment does exactly this
		row, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", "k")},
			Increment: map[string]int64{"count": 1}})
		p.check(err == nil && ok && row.Int("count") == 2, "IncrementOne after the conflicts: %v, ok=%v, err=%v; want count 2", row, ok, err)
		a, err := tx.Create(ctx, counterModel, map[string]any{"name": "after"})
		p.check(err == nil, "Create after the conflicts: %v", err)
		after = a.Int("id")
		b, ok, err = tx.FindOne(ctx, counterModel, core.Eq("id", before))
		p.check(err == nil && ok && b.Int("hits") == 0 && b.IsNull("slot"), "the row before the conflicts reads %v (ok=%v err=%v), want it unchanged", b, ok, err)
		return p.err()
	})
	require.NoError(t, err, "a transaction in which unique conflicts were reported must commit")
	reread(t, f, counterModel, before)
	reread(t, f, counterModel, after)
	n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("slot", "taken"))
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "rows holding the taken slot")
	requireSame(t, taken, reread(t, f, counterModel, taken.Int("id")), "the row holding the slot")
	rl, ok, err := f.DB.FindOne(f.Ctx, core.ModelRateLimit, core.Eq("key", "k"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.EqualValues(t, 2, rl.Int("count"), "the increment after the conflict committed")
	n, err = f.DB.Count(f.Ctx, counterModel)
	require.NoError(t, err)
	assert.EqualValues(t, 3, n, "counter rows: taken, before and after")
}
