package adaptertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Fixture is one subtest's fresh harness, with tables named for that
// subtest and a core.DB on them.
type Fixture struct {
	Ctx     context.Context
	Harness Harness
	Schema  *core.Schema
	Adapter driver.Adapter
	DB      *core.DB
	has     need          // what the adapter and the harness have
	needs   need          // what the running case asked for
	opts    []core.Option // for every DB after the first: core's fallback when needs has viaFallback
	tb      testing.TB
}

func (f *Fixture) context() context.Context { return f.Ctx }

var tableSeq atomic.Int64

// NewFixture builds a harness with newHarness, creates uniquely named
// tables for the built-in models and the suite's [CounterModel], and wraps
// the adapter in a core.DB. Everything is released when the test ends.
func NewFixture(t *testing.T, newHarness HarnessMaker) *Fixture {
	t.Helper()
	return newFixture(t, newHarness, keyTables)
}

// newFixture is NewFixture for a case that needs needs: the optional
// models' tables only when it needs keyTables, and f.DB on core's
// transaction fallback when it needs viaFallback. It skips t when the
// adapter or the harness lacks what the case needs.
func newFixture(t *testing.T, newHarness HarnessMaker, needs need) *Fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	h, err := newHarness(ctx, t)
	if err != nil {
		t.Fatalf("making harness: %v", err)
	}
	t.Cleanup(h.Close)
	s := uniqueSchema()
	if needs&keyTables == 0 {
		s = s.Without(core.ModelRerolledKey, core.ModelAPIKeyLimit, core.ModelAPIKeyRefill)
	}
	a, err := h.MakeAdapter(ctx, s)
	if err != nil {
		t.Fatalf("making adapter: %v", err)
	}
	f := &Fixture{Ctx: ctx, Harness: h, Schema: s, Adapter: a, has: hasOf(a, h.Capabilities()), needs: needs, tb: t}
	if _, ok := h.(TxHandles); ok {
		f.has |= txHandles
	}
	skipLacking(t, needs, f.has)
	if needs&viaFallback != 0 {
		f.opts = []core.Option{core.WithFallback()}
	}
	if f.DB, err = core.New(a, append([]core.Option{core.WithSchema(s)}, f.opts...)...); err != nil {
		t.Fatalf("core.New: %v", err)
	}
	return f
}

// hasOf is what the suite finds out about an adapter by type assertion,
// and what its harness declares.
func hasOf(a driver.Adapter, declared Capabilities) need {
	var has need
	_, native := a.(driver.Incrementer)
	_, tx := a.(driver.Transactor)
	if native {
		has |= nativeIncrement
	}
	if tx {
		has |= transactions
	}
	if native && tx {
		has |= viaFallback
	}
	if declared.SeveralPools {
		has |= severalPools
	}
	if declared.Serializable {
		has |= serializable
	}
	return has
}

// uniqueSchema names every table after a process-wide sequence number and
// the clock, short enough for every dialect's identifier limit.
func uniqueSchema() *core.Schema {
	tag := fmt.Sprintf("t%d_%d", time.Now().UnixNano()%1e6, tableSeq.Add(1))
	naming := core.Naming{Tables: map[string]string{}}
	for _, m := range append(core.BuiltinModels(), CounterModel()) {
		naming.Tables[m.Name] = strings.ToLower(m.Name) + "_" + tag
	}
	return core.MustSchema(naming, CounterModel())
}

// DBs returns n core.DBs on the fixture's tables, as n application servers
// would have: the first is f.DB; the others come from MakePeer when the
// harness declares SeveralPools, and share f.Adapter otherwise. opts are
// passed to core.New for every DB after the first, after the fixture's own
// (core's fallback, for a case that runs through it).
func (f *Fixture) DBs(n int, opts ...core.Option) ([]*core.DB, error) {
	dbs := []*core.DB{f.DB}
	for len(dbs) < n {
		a := f.Adapter
		if f.has&severalPools != 0 {
			var err error
			if a, err = f.Harness.MakePeer(f.Ctx, f.Schema); err != nil {
				return nil, fmt.Errorf("MakePeer: %w", err)
			}
		}
		db, err := core.New(a, append(append([]core.Option{core.WithSchema(f.Schema)}, f.opts...), opts...)...)
		if err != nil {
			return nil, err
		}
		dbs = append(dbs, db)
	}
	return dbs, nil
}

// callers are the DBs a case's concurrent callers share, round-robin:
// racePools of them when the case needs severalPools, f.DB alone
// otherwise.
func (f *Fixture) callers() ([]*core.DB, error) {
	if f.needs&severalPools == 0 {
		return []*core.DB{f.DB}, nil
	}
	return f.DBs(racePools)
}

// Release starts n goroutines, holds them at a barrier until all have
// started, releases them at once, and waits for them all. fn receives the
// goroutine's index.
func Release(n int, fn func(i int)) {
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			ready.Done()
			<-gate
			fn(i)
		}()
	}
	ready.Wait()
	close(gate)
	done.Wait()
}
