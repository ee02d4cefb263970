package adaptertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

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
