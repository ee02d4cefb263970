package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
