package adaptertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

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

const ruleReturningSomeFields = "an IncrementOne naming fields in Returning writes as any other, and its row holds those fields as stored after the write (it may hold more, never other values); a miss is still no match, and an unknown field is ErrInvalid before any write"

func caseReturningSomeFields(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "some", map[string]any{"hits": 4, "budget": 9, "label": "kept", "slot": "some-slot"})
	where := []core.Where{core.Eq("id", r.Int("id")), core.Lt("hits", 7)}
	for i := range 3 {
		seen := t0.Add(time.Duration(i+1) * time.Second)
		row, ok, err := f.DB.IncrementOne(f.Ctx, core.IncrementRequest{Model: counterModel, Where: where,
			Increment: map[string]int64{"hits": 1}, Set: map[string]any{"seenAt": seen}, Returning: []string{"hits", "seenAt", "label"}})
		require.NoError(t, err)
		require.True(t, ok, "write %d matched nothing", i+1)
		stored := reread(t, f, counterModel, r.Int("id"))
		assert.EqualValues(t, 5+i, row.Int("hits"))
		assert.EqualValues(t, 5+i, stored.Int("hits"))
		assert.True(t, row.Time("seenAt").Equal(seen), "seenAt %v, want %v", row.Time("seenAt"), seen)
		assert.Equal(t, "kept", row.Text("label"))
		for field, v := range row {
			requireSame(t, core.Row{field: stored[field]}, core.Row{field: v}, "returned field "+field)
		}
	}
	// hits is 7 now: the guard holds no more.
	_, ok, err := f.DB.IncrementOne(f.Ctx, core.IncrementRequest{Model: counterModel, Where: where,
		Increment: map[string]int64{"hits": 1}, Returning: []string{"hits"}})
	require.NoError(t, err)
	assert.False(t, ok, "a write past its guard matched")
	_, _, err = f.DB.IncrementOne(f.Ctx, core.IncrementRequest{Model: counterModel, Where: []core.Where{core.Eq("id", r.Int("id"))},
		Increment: map[string]int64{"hits": 1}, Returning: []string{"hits", "nosuch"}})
	require.ErrorIs(t, err, core.ErrInvalid)
	assert.EqualValues(t, 7, reread(t, f, counterModel, r.Int("id")).Int("hits"), "an invalid request wrote")
}
