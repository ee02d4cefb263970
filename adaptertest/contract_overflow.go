package adaptertest

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

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
