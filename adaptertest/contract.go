package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Fixed instants for the time cases, at millisecond precision, and two
// zones away from UTC on either side (fixed, so no tzdata is needed).
var (
	t0      = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	kolkata = time.FixedZone("UTC+05:30", 5*3600+30*60)
	newYork = time.FixedZone("UTC-05:00", -5*3600)
)

// newCounter creates a counter row named name with extra fields.
func newCounter(t testing.TB, f *Fixture, name string, extra map[string]any) core.Row {
	t.Helper()
	values := map[string]any{"name": name}
	for k, v := range extra {
		values[k] = v
	}
	row, err := f.DB.Create(f.Ctx, counterModel, values)
	require.NoError(t, err, "Create %s", name)
	return row
}

// reread returns the stored row with the given id.
func reread(t testing.TB, f *Fixture, model string, id int64) core.Row {
	t.Helper()
	row, ok, err := f.DB.FindOne(f.Ctx, model, core.Eq("id", id))
	require.NoError(t, err, "FindOne id %d", id)
	require.True(t, ok, "row %d is gone", id)
	return row
}

// requireSame fails unless got holds the same values as want.
func requireSame(t testing.TB, want, got core.Row, what string) {
	t.Helper()
	if d := sameRow(want, got); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
}

// increment calls IncrementOne on the counter model.
func increment(f *Fixture, where []core.Where, inc map[string]int64, set map[string]any) (core.Row, bool, error) {
	return f.DB.IncrementOne(f.Ctx, core.IncrementRequest{Model: counterModel, Where: where, Increment: inc, Set: set})
}

// requireWrite runs IncrementOne, requires a match, and requires that the
// returned row is the stored row.
func requireWrite(t testing.TB, f *Fixture, where []core.Where, inc map[string]int64, set map[string]any) core.Row {
	t.Helper()
	row, ok, err := increment(f, where, inc, set)
	require.NoError(t, err)
	require.True(t, ok, "IncrementOne(where %v) matched nothing", where)
	requireSame(t, reread(t, f, counterModel, row.Int("id")), row, "returned row differs from the stored row")
	return row
}

// requireMiss runs IncrementOne, requires no match, and requires that the
// row before is unchanged.
func requireMiss(t testing.TB, f *Fixture, before core.Row, where []core.Where, inc map[string]int64, set map[string]any) {
	t.Helper()
	row, ok, err := increment(f, where, inc, set)
	require.NoError(t, err)
	require.False(t, ok, "IncrementOne(where %v) matched row %v", where, row)
	requireSame(t, before, reread(t, f, counterModel, before.Int("id")), "a guard miss changed the row")
}

const ruleOperator = "each operator (eq, ne, lt, lte, gt, gte, in, not in; the case's name says which) works as a guard on int, string and time fields: a satisfied guard matches, an unsatisfied one does not"

// operatorProbe is a value of a field that the guard's row satisfies
// (match) and one it does not (miss).
type operatorProbe struct {
	field       string
	match, miss any
}

// operators are the guard operators with a probe on an int, a string and
// a time field each. Strings are lowercase ASCII so that every collation
// orders them the same way.
var operators = func() map[string]struct {
	where  func(field string, v any) core.Where
	probes []operatorProbe
} {
	ms := time.Millisecond
	type op = struct {
		where  func(field string, v any) core.Where
		probes []operatorProbe
	}
	return map[string]op{
		"eq":  {core.Eq, []operatorProbe{{"hits", 5, 6}, {"name", "bravo", "charlie"}, {"seenAt", t0.In(kolkata), t0.Add(ms)}}},
		"ne":  {core.Ne, []operatorProbe{{"hits", 6, 5}, {"name", "alpha", "bravo"}, {"seenAt", t0.Add(time.Second), t0.In(newYork)}}},
		"lt":  {core.Lt, []operatorProbe{{"hits", 6, 5}, {"name", "charlie", "bravo"}, {"seenAt", t0.Add(ms).In(newYork), t0}}},
		"lte": {core.Lte, []operatorProbe{{"hits", 5, 4}, {"name", "bravo", "alpha"}, {"seenAt", t0.In(kolkata), t0.Add(-ms)}}},
		"gt":  {core.Gt, []operatorProbe{{"hits", 4, 5}, {"name", "alpha", "bravo"}, {"seenAt", t0.Add(-ms).In(kolkata), t0.In(newYork)}}},
		"gte": {core.Gte, []operatorProbe{{"hits", 5, 6}, {"name", "bravo", "charlie"}, {"seenAt", t0.In(newYork), t0.Add(ms)}}},
		"in": {func(f string, v any) core.Where { return core.In(f, v.([]any)...) }, []operatorProbe{
			{"hits", []any{7, 5}, []any{4, 6}},
			{"name", []any{"alpha", "bravo"}, []any{"alpha", "charlie"}},
			{"seenAt", []any{t0.Add(time.Hour), t0.In(kolkata)}, []any{t0.Add(ms)}}}},
		"not in": {func(f string, v any) core.Where { return core.NotIn(f, v.([]any)...) }, []operatorProbe{
			{"hits", []any{4, 6}, []any{7, 5}},
			{"name", []any{"alpha"}, []any{"bravo", "charlie"}},
			{"seenAt", []any{t0.Add(ms)}, []any{t0.Add(time.Hour), t0.In(newYork)}}}},
	}
}()

// caseOperator checks one operator as a guard, once with a value the row
// satisfies and once with one it does not, on each probed field.
func caseOperator(name string) func(testing.TB, *Fixture) {
	op, ok := operators[name]
	if !ok {
		panic("adaptertest: no operator " + name)
	}
	return func(t testing.TB, f *Fixture) {
		r := newCounter(t, f, "bravo", map[string]any{"hits": 5, "seenAt": t0, "budget": 0})
		decoy := newCounter(t, f, "zulu", map[string]any{"hits": 50, "seenAt": t0.Add(24 * time.Hour), "budget": 0})
		id := core.Eq("id", r.Int("id"))
		want := int64(0)
		for _, p := range op.probes {
			row := requireWrite(t, f, []core.Where{id, op.where(p.field, p.match)}, map[string]int64{"budget": 1}, nil)
			want++
			assert.Equal(t, want, row.Int("budget"), "%s %s %v should match", p.field, name, p.match)
			requireMiss(t, f, row, []core.Where{id, op.where(p.field, p.miss)}, map[string]int64{"budget": 1}, nil)
		}
		// the same guard without the id: only the row that satisfies it changes
		p := op.probes[0]
		n, err := f.DB.Count(f.Ctx, counterModel, op.where(p.field, p.match))
		require.NoError(t, err)
		wantN := int64(1)
		if name == "ne" || name == "gt" || name == "gte" || name == "not in" {
			wantN = 2 // the decoy's hits is 50
		}
		assert.Equal(t, wantN, n, "Count(hits %s %v)", name, p.match)
		requireSame(t, decoy, reread(t, f, counterModel, decoy.Int("id")), "the decoy changed")
	}
}

const ruleOptionalInterfaces = "core.DB uses the adapter's own IncrementOne exactly when the adapter implements driver.Incrementer, and without driver.Transactor InTx fails with ErrUnsupported (the suite finds both out by type assertion, as core does)"

func caseOptionalInterfaces(t testing.TB, f *Fixture) {
	t.Logf("the adapter implements driver.Incrementer: %v, driver.Transactor: %v; the harness declares SeveralPools: %v",
		f.has&nativeIncrement != 0, f.has&transactions != 0, f.has&severalPools != 0)
	assert.Equal(t, f.has&nativeIncrement != 0, f.DB.NativeIncrement(), "core.DB's choice of native IncrementOne")
	if f.has&transactions == 0 {
		err := f.DB.InTx(f.Ctx, func(context.Context, *core.DB) error { return nil })
		assert.ErrorIs(t, err, core.ErrUnsupported)
	}
}

const rulePositiveDelta = "each delta is applied in the database (col = col + ?) and the row after the write is returned"

func casePositiveDelta(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "pos", map[string]any{"hits": 5})
	row := requireWrite(t, f, []core.Where{core.Eq("id", r.Int("id"))}, map[string]int64{"hits": 3}, nil)
	assert.EqualValues(t, 8, row.Int("hits"))
	row = requireWrite(t, f, []core.Where{core.Eq("id", r.Int("id"))}, map[string]int64{"hits": 1 << 40}, nil)
	assert.EqualValues(t, 8+1<<40, row.Int("hits"))
}

const ruleNegativeDelta = "a delta may be negative, and without a guard it may take the value below zero"

func caseNegativeDelta(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "neg", map[string]any{"hits": 5})
	row := requireWrite(t, f, []core.Where{core.Eq("id", r.Int("id"))}, map[string]int64{"hits": -7}, nil)
	assert.EqualValues(t, -2, row.Int("hits"))
}

const ruleSeveralDeltasAndSet = "one call applies several deltas and several absolute assignments to the same row at once"

func caseSeveralDeltasAndSet(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "multi", map[string]any{"hits": 10, "budget": 100})
	other := newCounter(t, f, "other", map[string]any{"hits": 10, "budget": 100})
	seen := t0.In(kolkata)
	row := requireWrite(t, f, []core.Where{core.Eq("id", r.Int("id"))},
		map[string]int64{"hits": 2, "budget": -30},
		map[string]any{"label": "both", "flag": true, "seenAt": seen})
	want := core.Row{"id": r.Int("id"), "name": "multi", "hits": int64(12), "budget": int64(70),
		"flag": true, "seenAt": t0, "label": "both", "slot": nil}
	requireSame(t, want, row, "row after several deltas and Set")
	requireSame(t, other, reread(t, f, counterModel, other.Int("id")), "another row changed")
}

const ruleReturnedRowIsStoredRow = "IncrementOne returns the row as it is after the write: every column equals what FindOne reads back"

func caseReturnedRowIsStoredRow(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "ret", map[string]any{"hits": 1, "budget": 9, "seenAt": t0, "label": "l", "slot": "ret-slot"})
	for i := 0; i < 3; i++ {
		row := requireWrite(t, f, []core.Where{core.Eq("id", r.Int("id"))},
			map[string]int64{"hits": 1, "budget": -1}, map[string]any{"seenAt": t0.Add(time.Duration(i+1) * time.Second)})
		assert.EqualValues(t, 2+i, row.Int("hits"))
		assert.EqualValues(t, 8-i, row.Int("budget"))
		assert.True(t, row.Time("seenAt").Equal(t0.Add(time.Duration(i+1)*time.Second)), "seenAt %v", row.Time("seenAt"))
		assert.Equal(t, "ret-slot", row.Text("slot"))
	}
}

const ruleGuardMissChangesNothing = "when the guard selects nothing, IncrementOne reports no match (ok == false, no error) and changes nothing"

func caseGuardMissChangesNothing(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "miss", map[string]any{"hits": 5, "budget": 0})
	other := newCounter(t, f, "other", map[string]any{"hits": 50, "budget": 0})
	requireMiss(t, f, r, []core.Where{core.Eq("id", r.Int("id")), core.Gt("hits", 10)},
		map[string]int64{"hits": 1}, map[string]any{"label": "x"})
	requireMiss(t, f, r, []core.Where{core.Eq("name", "nobody")}, map[string]int64{"hits": 1}, nil)
	requireMiss(t, f, r, []core.Where{core.Eq("id", r.Int("id")), core.Gt("budget", 0)}, map[string]int64{"budget": -1}, nil)
	requireSame(t, other, reread(t, f, counterModel, other.Int("id")), "another row changed")
}

const ruleEqNilIsNull = "eq nil means IS NULL and ne nil means IS NOT NULL, on int, string and time fields (a naive = NULL never matches)"

func caseEqNilIsNull(t testing.TB, f *Fixture) {
	null := newCounter(t, f, "nul", nil)
	set := newCounter(t, f, "nul", map[string]any{"budget": 3, "label": "x", "seenAt": t0})
	for i, field := range []string{"budget", "label", "seenAt"} {
		row := requireWrite(t, f, []core.Where{core.Eq("name", "nul"), core.Eq(field, nil)}, map[string]int64{"hits": 1}, nil)
		assert.Equal(t, null.Int("id"), row.Int("id"), "eq nil on %s picked the wrong row", field)
		assert.EqualValues(t, i+1, row.Int("hits"))
		row = requireWrite(t, f, []core.Where{core.Eq("name", "nul"), core.Ne(field, nil)}, map[string]int64{"hits": 1}, nil)
		assert.Equal(t, set.Int("id"), row.Int("id"), "ne nil on %s picked the wrong row", field)
		assert.EqualValues(t, i+1, row.Int("hits"))
		// the IsNull and IsNotNull spellings are the same clauses
		n, err := f.DB.Count(f.Ctx, counterModel, core.IsNull(field))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "IsNull(%s)", field)
		n, err = f.DB.Count(f.Ctx, counterModel, core.IsNotNull(field))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "IsNotNull(%s)", field)
	}
}

const ruleDeltaOnNullStaysNull = "a delta on a NULL column leaves it NULL (no COALESCE), while the row's other changes apply"

func caseDeltaOnNullStaysNull(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "nulldelta", map[string]any{"hits": 1})
	row := requireWrite(t, f, []core.Where{core.Eq("id", r.Int("id"))}, map[string]int64{"budget": 5, "hits": 1}, nil)
	assert.True(t, row.IsNull("budget"), "budget became %v", row["budget"])
	assert.EqualValues(t, 2, row.Int("hits"))
	row = requireWrite(t, f, []core.Where{core.Eq("id", r.Int("id"))}, map[string]int64{"budget": -5}, nil)
	assert.True(t, row.IsNull("budget"), "budget became %v", row["budget"])
}

const ruleNullSatisfiesNoComparison = "a NULL column satisfies no comparison (eq, ne, lt, lte, gt, gte, in, not in with a value), as in SQL"

func caseNullSatisfiesNoComparison(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "nullcmp", nil)
	id := core.Eq("id", r.Int("id"))
	far, past := t0.AddDate(100, 0, 0), t0.AddDate(-100, 0, 0)
	for _, w := range []core.Where{
		core.Eq("budget", 0), core.Ne("budget", 5), core.Lt("budget", 100), core.Lte("budget", 100),
		core.Gt("budget", -100), core.Gte("budget", -100), core.In("budget", 1, 2), core.NotIn("budget", 1, 2),
		core.Eq("label", ""), core.Ne("label", "x"), core.Lt("label", "zzz"), core.Gte("label", ""),
		core.In("label", "x"), core.NotIn("label", "x"),
		core.Ne("seenAt", t0), core.Lt("seenAt", far), core.Gt("seenAt", past), core.NotIn("seenAt", t0),
	} {
		requireMiss(t, f, r, []core.Where{id, w}, map[string]int64{"hits": 1}, nil)
	}
}

const ruleSeveralRowsMatchOneChanges = "where several rows match the guard, exactly one changes, and the returned row is the changed one"

func caseSeveralRowsMatchOneChanges(t testing.TB, f *Fixture) {
	var ids []int64
	for i := 0; i < 3; i++ {
		ids = append(ids, newCounter(t, f, "many", nil).Int("id"))
	}
	decoy := newCounter(t, f, "decoy", nil)
	picked := map[int64]bool{}
	for i := 1; i <= 3; i++ {
		row := requireWrite(t, f, []core.Where{core.Eq("name", "many"), core.Eq("hits", 0)},
			map[string]int64{"hits": 1}, map[string]any{"label": fmt.Sprint("pick", i)})
		assert.Contains(t, ids, row.Int("id"))
		assert.False(t, picked[row.Int("id")], "row %d picked twice", row.Int("id"))
		picked[row.Int("id")] = true
		n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("name", "many"), core.Eq("hits", 1))
		require.NoError(t, err)
		assert.EqualValues(t, i, n, "rows changed after %d calls", i)
		n, err = f.DB.Count(f.Ctx, counterModel, core.Eq("label", fmt.Sprint("pick", i)))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "rows given label pick%d", i)
	}
	_, ok, err := increment(f, []core.Where{core.Eq("name", "many"), core.Eq("hits", 0)}, map[string]int64{"hits": 1}, nil)
	require.NoError(t, err)
	assert.False(t, ok, "a fourth call matched although every row was taken")
	requireSame(t, decoy, reread(t, f, counterModel, decoy.Int("id")), "a row outside the guard changed")
}

const ruleInvalidBeforeIO = "an unknown model or field, a wrong type, and an empty update (no Increment and no Set) are ErrInvalid errors naming the problem, before anything reaches the adapter"

func caseInvalidBeforeIO(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "valid", map[string]any{"hits": 1})
	id := core.Eq("id", r.Int("id"))
	spy := &noIO{}
	spyDB, err := core.New(spy, core.WithSchema(f.Schema))
	require.NoError(t, err)
	bad := []struct {
		req  core.IncrementRequest
		name string // what the error must mention
	}{
		{core.IncrementRequest{Model: counterModel, Where: []core.Where{id}, Increment: map[string]int64{"nope": 1}}, "nope"},
		{core.IncrementRequest{Model: counterModel, Where: []core.Where{id}, Set: map[string]any{"nope": 1}}, "nope"},
		{core.IncrementRequest{Model: counterModel, Where: []core.Where{core.Eq("nope", 1)}, Increment: map[string]int64{"hits": 1}}, "nope"},
		{core.IncrementRequest{Model: counterModel, Where: []core.Where{id}}, "empty"},
		{core.IncrementRequest{Model: counterModel, Where: []core.Where{id}, Increment: map[string]int64{}, Set: map[string]any{}}, "empty"},
		{core.IncrementRequest{Model: "nope", Where: []core.Where{id}, Increment: map[string]int64{"hits": 1}}, "nope"},
		{core.IncrementRequest{Model: counterModel, Where: []core.Where{id}, Increment: map[string]int64{"name": 1}}, "name"},
		{core.IncrementRequest{Model: counterModel, Where: []core.Where{id}, Set: map[string]any{"hits": "ten"}}, "hits"},
	}
	for _, b := range bad {
		for _, db := range []*core.DB{spyDB, f.DB} {
			_, ok, err := db.IncrementOne(f.Ctx, b.req)
			require.ErrorIs(t, err, core.ErrInvalid, "request %+v", b.req)
			assert.False(t, ok)
			assert.Contains(t, err.Error(), b.name, "the error should say what is wrong")
		}
	}
	_, _, err = spyDB.Update(f.Ctx, counterModel, []core.Where{id}, nil)
	assert.ErrorIs(t, err, core.ErrInvalid, "Update with nothing to set")
	_, err = spyDB.UpdateMany(f.Ctx, counterModel, []core.Where{id}, map[string]any{})
	assert.ErrorIs(t, err, core.ErrInvalid, "UpdateMany with nothing to set")
	_, err = spyDB.Create(f.Ctx, counterModel, map[string]any{"name": "x", "nope": 1})
	assert.ErrorIs(t, err, core.ErrInvalid, "Create with an unknown field")
	assert.Zero(t, spy.calls.Load(), "invalid requests reached the adapter")
	requireSame(t, r, reread(t, f, counterModel, r.Int("id")), "an invalid request changed the row")
}

const ruleIdenticalRewriteIsAMatch = "a write that leaves the row's values as they were (Set to the same values, a delta of 0) is still a match: rows matched, not rows changed (the MySQL rows-changed trap)"

func caseIdenticalRewriteIsAMatch(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "same", map[string]any{"hits": 5, "label": "same", "flag": true, "seenAt": t0})
	id := []core.Where{core.Eq("id", r.Int("id"))}
	row := requireWrite(t, f, id, nil, map[string]any{"label": "same", "flag": true, "seenAt": t0.In(newYork)})
	requireSame(t, r, row, "identical Set")
	row = requireWrite(t, f, id, map[string]int64{"hits": 0}, nil)
	requireSame(t, r, row, "delta of 0")
	row = requireWrite(t, f, append(id, core.Eq("label", "same")), map[string]int64{"hits": 0}, map[string]any{"label": "same"})
	requireSame(t, r, row, "delta of 0 plus identical Set")
}

const ruleTimesRoundTripAcrossZones = "times round-trip as instants at millisecond precision whatever zone they are given in, and range guards on them (lt, lte, gt, gte) compare instants"

func caseTimesRoundTripAcrossZones(t testing.TB, f *Fixture) {
	given := t0.Add(456_789 * time.Nanosecond).In(kolkata) // sub-millisecond part is dropped
	r := newCounter(t, f, "times", map[string]any{"seenAt": given})
	assert.True(t, r.Time("seenAt").Equal(t0), "Create returned %v, want %v", r.Time("seenAt"), t0)
	assert.Equal(t, time.UTC, r.Time("seenAt").Location(), "times come back in UTC")
	stored := reread(t, f, counterModel, r.Int("id"))
	assert.True(t, stored.Time("seenAt").Equal(t0), "FindOne returned %v, want %v", stored.Time("seenAt"), t0)

	t1 := t0.Add(90 * time.Minute)
	row := requireWrite(t, f, []core.Where{core.Eq("id", r.Int("id"))}, nil, map[string]any{"seenAt": t1.In(newYork)})
	assert.True(t, row.Time("seenAt").Equal(t1), "IncrementOne returned %v, want %v", row.Time("seenAt"), t1)
	row = reread(t, f, counterModel, r.Int("id"))
	id := core.Eq("id", r.Int("id"))
	for _, w := range []core.Where{
		core.Gt("seenAt", t1.Add(-time.Millisecond).In(kolkata)),
		core.Gte("seenAt", t1.In(kolkata)),
		core.Lte("seenAt", t1.In(newYork)),
		core.Lt("seenAt", t1.Add(time.Millisecond).In(newYork)),
		core.Lt("seenAt", t1.Add(time.Hour).In(kolkata)),
	} {
		row = requireWrite(t, f, []core.Where{id, w}, map[string]int64{"hits": 1}, nil)
	}
	assert.EqualValues(t, 5, row.Int("hits"))
	for _, w := range []core.Where{
		core.Gt("seenAt", t1.In(newYork)),
		core.Lt("seenAt", t1.In(kolkata)),
		core.Gte("seenAt", t1.Add(time.Millisecond).In(kolkata)),
		core.Lte("seenAt", t1.Add(-time.Millisecond).In(newYork)),
		// same wall clock as t1 in UTC-05:00 is five hours after t1
		core.Gte("seenAt", time.Date(t1.Year(), t1.Month(), t1.Day(), t1.Hour(), t1.Minute(), t1.Second(), t1.Nanosecond(), newYork)),
	} {
		requireMiss(t, f, row, []core.Where{id, w}, map[string]int64{"hits": 1}, nil)
	}
	n, err := f.DB.Count(f.Ctx, counterModel, core.Gte("seenAt", t1.Add(-time.Hour).In(newYork)), core.Lt("seenAt", t1.Add(time.Millisecond).In(kolkata)))
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "Count with a range on seenAt")
}

const ruleCreateReturnsStoredRow = "Create inserts one row, fills defaults for the fields left out, and returns it as stored with its new primary key"

func caseCreateReturnsStoredRow(t testing.TB, f *Fixture) {
	a := newCounter(t, f, "a", nil)
	b := newCounter(t, f, "b", map[string]any{"hits": 7, "budget": 3, "flag": true, "seenAt": t0, "label": "l", "slot": "s"})
	assert.Positive(t, a.Int("id"))
	assert.NotEqual(t, a.Int("id"), b.Int("id"))
	requireSame(t, core.Row{"id": a.Int("id"), "name": "a", "hits": int64(0), "budget": nil, "flag": false,
		"seenAt": nil, "label": nil, "slot": nil}, a, "Create with defaults")
	requireSame(t, core.Row{"id": b.Int("id"), "name": "b", "hits": int64(7), "budget": int64(3), "flag": true,
		"seenAt": t0, "label": "l", "slot": "s"}, b, "Create with every field")
	requireSame(t, a, reread(t, f, counterModel, a.Int("id")), "stored row a")
	requireSame(t, b, reread(t, f, counterModel, b.Int("id")), "stored row b")
	rl, err := f.DB.Create(f.Ctx, core.ModelRateLimit, map[string]any{"key": "k", "count": 1, "lastRequest": t0.UnixMilli()})
	require.NoError(t, err)
	assert.Equal(t, "k", rl.Text("key"))
	assert.Equal(t, t0.UnixMilli(), rl.Int("lastRequest"))
	ak, err := f.DB.Create(f.Ctx, core.ModelAPIKey, map[string]any{"key": "hash", "referenceId": "u1", "remaining": 5,
		"createdAt": t0, "updatedAt": t0.In(kolkata)})
	require.NoError(t, err)
	assert.Equal(t, "default", ak.Text("configId"))
	assert.True(t, ak.Bool("enabled"))
	assert.True(t, ak.IsNull("expiresAt"))
	assert.True(t, ak.Time("updatedAt").Equal(t0))
}

const ruleFindOneFirstInKeyOrder = "FindOne returns the first matching row in primary-key order, or ok == false when none matches"

func caseFindOneFirstInKeyOrder(t testing.TB, f *Fixture) {
	first := newCounter(t, f, "f", map[string]any{"hits": 9})
	newCounter(t, f, "f", map[string]any{"hits": 1})
	row, ok, err := f.DB.FindOne(f.Ctx, counterModel, core.Eq("name", "f"))
	require.NoError(t, err)
	require.True(t, ok)
	requireSame(t, first, row, "FindOne")
	_, ok, err = f.DB.FindOne(f.Ctx, counterModel, core.Eq("name", "none"))
	require.NoError(t, err)
	assert.False(t, ok)
}

const ruleFindManySortLimitOffset = "FindMany returns the matching rows, in primary-key order by default, sorted by a field either way, limited and offset"

func caseFindManySortLimitOffset(t testing.TB, f *Fixture) {
	for i, h := range []int{3, 1, 4, 2, 5} {
		newCounter(t, f, fmt.Sprint("row", i), map[string]any{"hits": h, "label": "in"})
	}
	newCounter(t, f, "out", map[string]any{"hits": 100})
	in := []core.Where{core.Eq("label", "in")}
	hits := func(opts *core.FindOptions) []int64 {
		rows, err := f.DB.FindMany(f.Ctx, counterModel, in, opts)
		require.NoError(t, err)
		out := []int64{}
		for _, r := range rows {
			out = append(out, r.Int("hits"))
		}
		return out
	}
	assert.Equal(t, []int64{3, 1, 4, 2, 5}, hits(nil), "primary-key order")
	assert.Equal(t, []int64{1, 2, 3, 4, 5}, hits(&core.FindOptions{SortBy: "hits"}))
	assert.Equal(t, []int64{4, 3}, hits(&core.FindOptions{SortBy: "hits", Desc: true, Limit: 2, Offset: 1}))
	assert.Equal(t, []int64{2, 5}, hits(&core.FindOptions{Offset: 3}))
	assert.Equal(t, []int64{3, 1}, hits(&core.FindOptions{Limit: 2}))
	assert.Equal(t, []int64{}, hits(&core.FindOptions{Offset: 10}))
	rows, err := f.DB.FindMany(f.Ctx, counterModel, nil, &core.FindOptions{SortBy: "name", Desc: true, Limit: 1})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "row4", rows[0].Text("name"))
}

const ruleUpdateAtMostOne = "Update sets fields on at most one matching row and returns it as stored, or ok == false when none matches"

func caseUpdateAtMostOne(t testing.TB, f *Fixture) {
	newCounter(t, f, "u", nil)
	newCounter(t, f, "u", nil)
	row, ok, err := f.DB.Update(f.Ctx, counterModel, []core.Where{core.Eq("name", "u")}, map[string]any{"label": "done", "hits": 4})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "done", row.Text("label"))
	assert.EqualValues(t, 4, row.Int("hits"))
	requireSame(t, reread(t, f, counterModel, row.Int("id")), row, "returned row differs from the stored row")
	n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("label", "done"))
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "rows updated")
	_, ok, err = f.DB.Update(f.Ctx, counterModel, []core.Where{core.Eq("name", "none")}, map[string]any{"label": "x"})
	require.NoError(t, err)
	assert.False(t, ok)
	row, ok, err = f.DB.Update(f.Ctx, counterModel, []core.Where{core.Eq("id", row.Int("id"))}, map[string]any{"label": "done"})
	require.NoError(t, err)
	assert.True(t, ok, "an Update that rewrites the same value is a match")
	assert.Equal(t, "done", row.Text("label"))
}

const ruleUpdateManyCountsMatched = "UpdateMany sets fields on every matching row and returns how many matched, counting rows whose values were already those"

func caseUpdateManyCountsMatched(t testing.TB, f *Fixture) {
	newCounter(t, f, "um", map[string]any{"label": "x"})
	newCounter(t, f, "um", nil)
	newCounter(t, f, "um", map[string]any{"label": "y"})
	other := newCounter(t, f, "other", nil)
	n, err := f.DB.UpdateMany(f.Ctx, counterModel, []core.Where{core.Eq("name", "um")}, map[string]any{"label": "x"})
	require.NoError(t, err)
	assert.EqualValues(t, 3, n)
	n, err = f.DB.UpdateMany(f.Ctx, counterModel, []core.Where{core.Eq("name", "um")}, map[string]any{"label": "x"})
	require.NoError(t, err)
	assert.EqualValues(t, 3, n, "rewriting identical values still matches every row")
	c, err := f.DB.Count(f.Ctx, counterModel, core.Eq("label", "x"))
	require.NoError(t, err)
	assert.EqualValues(t, 3, c)
	n, err = f.DB.UpdateMany(f.Ctx, counterModel, []core.Where{core.Eq("name", "none")}, map[string]any{"label": "x"})
	require.NoError(t, err)
	assert.Zero(t, n)
	requireSame(t, other, reread(t, f, counterModel, other.Int("id")), "a row outside the where changed")
}

const ruleDeleteAtMostOne = "Delete removes at most one matching row and reports whether it did"

func caseDeleteAtMostOne(t testing.TB, f *Fixture) {
	newCounter(t, f, "d", nil)
	newCounter(t, f, "d", nil)
	ok, err := f.DB.Delete(f.Ctx, counterModel, core.Eq("name", "d"))
	require.NoError(t, err)
	assert.True(t, ok)
	n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("name", "d"))
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "rows left")
	ok, err = f.DB.Delete(f.Ctx, counterModel, core.Eq("name", "none"))
	require.NoError(t, err)
	assert.False(t, ok)
}

const ruleDeleteManyAndCount = "DeleteMany removes every matching row and returns how many; Count returns the number of matching rows"

func caseDeleteManyAndCount(t testing.TB, f *Fixture) {
	for i := 0; i < 4; i++ {
		newCounter(t, f, "dm", map[string]any{"hits": i})
	}
	newCounter(t, f, "keep", nil)
	n, err := f.DB.Count(f.Ctx, counterModel)
	require.NoError(t, err)
	assert.EqualValues(t, 5, n)
	n, err = f.DB.Count(f.Ctx, counterModel, core.Eq("name", "dm"), core.Gte("hits", 2))
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	n, err = f.DB.DeleteMany(f.Ctx, counterModel, core.Eq("name", "dm"), core.In("hits", 0, 1, 2))
	require.NoError(t, err)
	assert.EqualValues(t, 3, n)
	n, err = f.DB.DeleteMany(f.Ctx, counterModel, core.Eq("name", "none"))
	require.NoError(t, err)
	assert.Zero(t, n)
	n, err = f.DB.Count(f.Ctx, counterModel)
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
}

const ruleUniqueConflict = "a duplicate unique key fails with an error satisfying errors.Is(err, core.ErrConflict) and writes nothing"

func caseUniqueConflict(t testing.TB, f *Fixture) {
	a := newCounter(t, f, "a", map[string]any{"slot": "taken"})
	_, err := f.DB.Create(f.Ctx, counterModel, map[string]any{"name": "b", "slot": "taken"})
	require.ErrorIs(t, err, core.ErrConflict, "Create with a taken unique value")
	n, err := f.DB.Count(f.Ctx, counterModel)
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
	_, err = f.DB.Create(f.Ctx, core.ModelRateLimit, map[string]any{"key": "k"})
	require.NoError(t, err)
	_, err = f.DB.Create(f.Ctx, core.ModelRateLimit, map[string]any{"key": "k"})
	require.ErrorIs(t, err, core.ErrConflict, "Create with a taken rateLimit key")
	b := newCounter(t, f, "b", map[string]any{"slot": "free"})
	_, _, err = f.DB.Update(f.Ctx, counterModel, []core.Where{core.Eq("id", b.Int("id"))}, map[string]any{"slot": "taken"})
	require.ErrorIs(t, err, core.ErrConflict, "Update to a taken unique value")
	_, _, err = increment(f, []core.Where{core.Eq("id", b.Int("id"))}, map[string]int64{"hits": 1}, map[string]any{"slot": "taken"})
	require.ErrorIs(t, err, core.ErrConflict, "IncrementOne setting a taken unique value")
	requireSame(t, b, reread(t, f, counterModel, b.Int("id")), "a conflicting write changed the row")
	requireSame(t, a, reread(t, f, counterModel, a.Int("id")), "a conflicting write changed the other row")
}

const ruleInTxCommits = "InTx runs its function in a transaction whose writes, IncrementOne included, are visible inside it and stored when it returns nil"

func caseInTxCommits(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "tx", map[string]any{"hits": 1})
	var created int64
	err := f.DB.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
		c, err := tx.Create(ctx, counterModel, map[string]any{"name": "made"})
		if err != nil {
			return err
		}
		created = c.Int("id")
		row, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: counterModel,
			Where: []core.Where{core.Eq("id", r.Int("id"))}, Increment: map[string]int64{"hits": 1}})
		if err != nil || !ok {
			return fmt.Errorf("IncrementOne in a transaction: ok=%v err=%v", ok, err)
		}
		seen, ok, err := tx.FindOne(ctx, counterModel, core.Eq("id", r.Int("id")))
		if err != nil || !ok || seen.Int("hits") != row.Int("hits") {
			return fmt.Errorf("inside the transaction FindOne saw %v (ok=%v err=%v), IncrementOne returned %v", seen, ok, err, row)
		}
		return nil
	})
	require.NoError(t, err)
	assert.EqualValues(t, 2, reread(t, f, counterModel, r.Int("id")).Int("hits"))
	reread(t, f, counterModel, created)
}

const ruleInTxRollsBack = "InTx rolls back every write of its function when the function returns an error, and returns that error"

func caseInTxRollsBack(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "tx", map[string]any{"hits": 1})
	boom := errors.New("boom")
	err := f.DB.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
		if _, err := tx.Create(ctx, counterModel, map[string]any{"name": "ghost"}); err != nil {
			return err
		}
		if _, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: counterModel,
			Where: []core.Where{core.Eq("id", r.Int("id"))}, Increment: map[string]int64{"hits": 5}}); err != nil || !ok {
			return fmt.Errorf("IncrementOne in a transaction: ok=%v err=%v", ok, err)
		}
		if _, err := tx.UpdateMany(ctx, counterModel, nil, map[string]any{"label": "tx"}); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	requireSame(t, r, reread(t, f, counterModel, r.Int("id")), "the rolled-back transaction changed the row")
	n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("name", "ghost"))
	require.NoError(t, err)
	assert.Zero(t, n, "the rolled-back transaction's row exists")
}

// noIO is an adapter that counts calls and fails them all: a request that
// reaches it was not rejected before I/O.
type noIO struct{ calls atomic.Int64 }

var errReached = errors.New("the request reached the adapter")

func (a *noIO) hit() error { a.calls.Add(1); return errReached }
func (a *noIO) Create(context.Context, *driver.Table, []driver.Assignment) (driver.Record, error) {
	return nil, a.hit()
}
func (a *noIO) FindOne(context.Context, *driver.Table, []driver.Where) (driver.Record, error) {
	return nil, a.hit()
}
func (a *noIO) FindMany(context.Context, *driver.Table, []driver.Where, driver.FindOptions) ([]driver.Record, error) {
	return nil, a.hit()
}
func (a *noIO) Update(context.Context, *driver.Table, []driver.Where, []driver.Assignment) (driver.Record, error) {
	return nil, a.hit()
}
func (a *noIO) UpdateMany(context.Context, *driver.Table, []driver.Where, []driver.Assignment) (int64, error) {
	return 0, a.hit()
}
func (a *noIO) Delete(context.Context, *driver.Table, []driver.Where) (bool, error) {
	return false, a.hit()
}
func (a *noIO) DeleteMany(context.Context, *driver.Table, []driver.Where) (int64, error) {
	return 0, a.hit()
}
func (a *noIO) Count(context.Context, *driver.Table, []driver.Where) (int64, error) {
	return 0, a.hit()
}
func (a *noIO) IncrementOne(context.Context, *driver.Table, []driver.Where, []driver.Delta, []driver.Assignment) (driver.Record, error) {
	return nil, a.hit()
}
func (a *noIO) Transaction(context.Context, func(context.Context, driver.Adapter) error) error {
	return a.hit()
}
