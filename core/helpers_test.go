package core_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// bare hides every optional interface of the wrapped adapter: it has
// neither IncrementOne nor Transaction.
type bare struct{ driver.Adapter }

// nativeOnly has IncrementOne but no transactions.
type nativeOnly struct {
	driver.Adapter
	driver.Incrementer
}

func newNativeOnly() (nativeOnly, *memory.Memory) {
	m := memory.New()
	return nativeOnly{Adapter: m, Incrementer: m}, m
}

// spy wraps the memory adapter, native IncrementOne and transactions
// included, and counts the calls to the optional interfaces so a test can
// tell which IncrementOne path did the work.
type spy struct {
	*memory.Memory
	increments   atomic.Int64
	transactions atomic.Int64
}

func (s *spy) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	s.increments.Add(1)
	return s.Memory.IncrementOne(ctx, t, where, inc, set)
}

func (s *spy) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	s.transactions.Add(1)
	return s.Memory.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		return fn(ctx, yielding{tx})
	})
}

// txCounter wraps an adapter without native IncrementOne and counts
// transactions, so the fallback's attempts can be counted.
type txCounter struct {
	driver.Adapter
	transactions atomic.Int64
}

func (c *txCounter) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	c.transactions.Add(1)
	return c.Adapter.(driver.Transactor).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		return fn(ctx, yielding{tx})
	})
}

// yielding gives the scheduler a chance to run another goroutine before each
// read and write, as a network round trip would, so that concurrent
// read-then-write sequences really interleave. It orders nothing: the
// tests' outcomes do not depend on it, only their power to catch a race.
type yielding struct{ driver.Adapter }

func (y yielding) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	runtime.Gosched()
	return y.Adapter.FindOne(ctx, t, where)
}

func (y yielding) UpdateMany(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (int64, error) {
	runtime.Gosched()
	return y.Adapter.UpdateMany(ctx, t, where, set)
}

// mustNew wraps a in a DB or stops the test.
func mustNew(t testing.TB, a driver.Adapter, opts ...core.Option) *core.DB {
	t.Helper()
	db, err := core.New(a, opts...)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	return db
}

// mustCreate inserts a row or stops the test.
func mustCreate(t testing.TB, db *core.DB, model string, values map[string]any) core.Row {
	t.Helper()
	row, err := db.Create(context.Background(), model, values)
	if err != nil {
		t.Fatalf("Create %s %v: %v", model, values, err)
	}
	return row
}

// mustFind reads the one row matching where or stops the test.
func mustFind(t testing.TB, db *core.DB, model string, where ...core.Where) core.Row {
	t.Helper()
	row, ok, err := db.FindOne(context.Background(), model, where...)
	if err != nil || !ok {
		t.Fatalf("FindOne %s %v: ok=%v err=%v", model, where, ok, err)
	}
	return row
}

// apikeyValues returns the fields an apikey needs to be created.
func apikeyValues(key string) map[string]any {
	now := fixedNow()
	return map[string]any{"key": key, "referenceId": "user-1", "createdAt": now, "updatedAt": now}
}

// wrappedOnce checks that err is one *core.Error naming op and model, with
// no second *core.Error inside it.
func wrappedOnce(t *testing.T, err error, op, model string) {
	t.Helper()
	var e *core.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *core.Error", err, err)
	}
	if e.Op != op || e.Model != model {
		t.Errorf("error names op %q model %q, want %q %q", e.Op, e.Model, op, model)
	}
	var inner *core.Error
	if e.Err != nil && errors.As(e.Err, &inner) {
		t.Errorf("error %v wraps a second *core.Error %v", err, inner)
	}
	if n := strings.Count(err.Error(), "sluice:"); n != 1 {
		t.Errorf("message %q has %d \"sluice:\" prefixes, want 1", err, n)
	}
	prefix := "sluice: " + op
	if model != "" {
		prefix += " " + model
	}
	if !strings.HasPrefix(err.Error(), prefix+": ") {
		t.Errorf("message %q does not start with %q", err, prefix+": ")
	}
}

// fixedNow is the instant the tests use for createdAt and the like; its
// sub-millisecond part shows the truncation on the way in.
func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6_789_000, time.UTC) }

// cols turns where clauses on fields into clauses on the columns of the
// same names, as an adapter receives them: for tests that call an adapter
// directly.
func cols(where ...core.Where) []driver.Where {
	out := make([]driver.Where, len(where))
	for i, w := range where {
		out[i] = driver.Where{Column: w.Field, Op: w.Op, Value: w.Value}
	}
	return out
}

// incrementPaths are the memory store with its native IncrementOne and
// without it, where core's fallback does the work: the tests that must
// hold on both run once per entry.
var incrementPaths = map[string]func(m *memory.Memory) driver.Adapter{
	"native":   func(m *memory.Memory) driver.Adapter { return m },
	"fallback": func(m *memory.Memory) driver.Adapter { return m.WithoutIncrementOne() },
}
