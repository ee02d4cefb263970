package adaptertest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

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
