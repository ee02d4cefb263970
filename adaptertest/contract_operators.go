package adaptertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

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
