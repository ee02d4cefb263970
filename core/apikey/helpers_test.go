package apikey

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testclock"
	"github.com/sluice-go/sluice/core/memory"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newClock() *testclock.Clock { return testclock.New(epoch) }

type env struct {
	m     *Manager
	db    *core.DB
	mem   *memory.Memory
	clock *testclock.Clock
	gates *gates // nil: reads are not gated
}

// newEnv returns a manager over a fresh in-memory database with a test clock.
func newEnv(t testing.TB, opts ...Option) *env {
	t.Helper()
	mem := memory.New()
	return newEnvOn(t, mem, mem, opts...)
}

func newEnvOn(t testing.TB, mem *memory.Memory, a driver.Adapter, opts ...Option) *env {
	t.Helper()
	db, err := core.New(a)
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	m, err := New(db, append([]Option{WithClock(c.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &env{m: m, db: db, mem: mem, clock: c}
}

// inEachMode runs test on a fresh manager in database, cached and
// storage-only mode.
func inEachMode(t *testing.T, test func(t *testing.T, e *env)) {
	sm, _, sc := newStoreEnv(t)
	for name, e := range map[string]*env{
		"database":     newEnv(t),
		"cached":       newEnv(t, WithCache(memory.NewStorage(), time.Hour)),
		"storage-only": {m: sm, clock: sc},
	} {
		t.Run(name, func(t *testing.T) { test(t, e) })
	}
}

func (e *env) create(t testing.TB, p CreateParams) (string, *Key) {
	t.Helper()
	if p.ReferenceID == "" {
		p.ReferenceID = "user-1"
	}
	plain, k, err := e.m.Create(context.Background(), p)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return plain, k
}

func (e *env) verify(t testing.TB, key string, opts ...VerifyOption) Result {
	t.Helper()
	r, err := e.m.Verify(context.Background(), key, opts...)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return r
}

func (e *env) get(t testing.TB, id int64) *Key {
	t.Helper()
	k, err := e.m.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%d): %v", id, err)
	}
	return k
}

func noRateLimit() *RateLimit { return &RateLimit{} }

func quota(n int64) *int64 { return &n }

func wantCode(t testing.TB, r Result, code Code) {
	t.Helper()
	if r.Code != code || r.Valid != (code == "") || r.Status != code.Status() {
		t.Fatalf("result = {Valid:%v Code:%q Status:%d}, want code %q status %d", r.Valid, r.Code, r.Status, code, code.Status())
	}
}

func remaining(t testing.TB, k *Key) int64 {
	t.Helper()
	if k.Remaining == nil {
		t.Fatal("Remaining is nil (unlimited)")
	}
	return *k.Remaining
}

// hookAdapter wraps the in-memory adapter and runs a hook before each
// IncrementOne, to interleave a concurrent change deterministically.
type hookAdapter struct {
	*memory.Memory
	before func(ctx context.Context)
	miss   bool // answer every IncrementOne with no match, as a lost race
}

func (h *hookAdapter) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	if h.before != nil {
		h.before(ctx)
	}
	if h.miss {
		_, err := h.Memory.Count(ctx, t, where) // still a round trip
		return nil, err
	}
	return h.Memory.IncrementOne(ctx, t, where, inc, set)
}

// readGate holds the first n reads, once done, until all n have arrived, so that n
// concurrent verifications all decide from the same snapshot before any of
// them writes: the worst interleaving, made certain rather than likely.
type readGate struct {
	mu      sync.Mutex
	n       int
	arrived int
	open    chan struct{}
}

func newReadGate(n int) *readGate { return &readGate{n: n, open: make(chan struct{})} }

func (g *readGate) wait() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.arrived++
	a := g.arrived
	if a == g.n {
		close(g.open)
	}
	g.mu.Unlock()
	if a <= g.n {
		<-g.open
	}
}

// gates is shared by the gated adapter and the gated cache of one env.
type gates struct{ p atomic.Pointer[readGate] }

func (g *gates) wait() { g.p.Load().wait() }

// gatedAdapter passes every call through, holding at the gate either
// FindOne (after it) or, with writes set, the start of every write that a
// verification makes (IncrementOne, or the fallback's Transaction).
type gatedAdapter struct {
	driver.Adapter
	g      *gates
	writes bool
}

func (a gatedAdapter) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	rec, err := a.Adapter.FindOne(ctx, t, where)
	if !a.writes {
		a.g.wait() // after the read: the snapshot is taken before anyone writes
	}
	return rec, err
}

func (a gatedAdapter) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	if a.writes {
		a.g.wait() // before the write: every verification has planned it
	}
	return a.Adapter.(driver.Transactor).Transaction(ctx, fn)
}

type gatedIncrementer struct{ gatedAdapter }

func (a gatedIncrementer) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	if a.writes {
		a.g.wait()
	}
	return a.Adapter.(driver.Incrementer).IncrementOne(ctx, t, where, inc, set)
}

// countingAdapter counts the calls of each adapter method that a
// verification may make.
type countingAdapter struct {
	*memory.Memory
	findOne, increment, other atomic.Int64
}

func (c *countingAdapter) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	c.findOne.Add(1)
	return c.Memory.FindOne(ctx, t, where)
}

func (c *countingAdapter) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	c.increment.Add(1)
	return c.Memory.IncrementOne(ctx, t, where, inc, set)
}

func (c *countingAdapter) Update(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (driver.Record, error) {
	c.other.Add(1)
	return c.Memory.Update(ctx, t, where, set)
}

func (c *countingAdapter) Delete(ctx context.Context, t *driver.Table, where []driver.Where) (bool, error) {
	c.other.Add(1)
	return c.Memory.Delete(ctx, t, where)
}

func (c *countingAdapter) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	c.other.Add(1)
	return c.Memory.Transaction(ctx, fn)
}

// calls returns the counts so far: FindOne, IncrementOne, and the rest of
// the methods counted.
func (c *countingAdapter) calls() [3]int64 {
	return [3]int64{c.findOne.Load(), c.increment.Load(), c.other.Load()}
}

// unguarded is a deliberately broken database: its IncrementOne ignores
// the guards on the given fields, as a verification whose write forgot
// them would. A race test must fail on it.
type unguarded struct {
	*memory.Memory
	fields []string
}

func (u unguarded) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	kept := make([]driver.Where, 0, len(where))
next:
	for _, w := range where {
		for _, f := range u.fields {
			if c, ok := t.Column(f); ok && c.Name == w.Column {
				continue next
			}
		}
		kept = append(kept, w)
	}
	return u.Memory.IncrementOne(ctx, t, kept, inc, set)
}

// gatedCache holds Get at the gate.
type gatedCache struct {
	*memory.Storage
	g *gates
}

func (c gatedCache) Get(ctx context.Context, key string) (string, bool, error) {
	v, ok, err := c.Storage.Get(ctx, key)
	c.g.wait()
	return v, ok, err
}
