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

// Run runs the whole conformance suite against the adapters newHarness
// makes: the IncrementOne contract, the race cases (contention retried
// inside the adapter among them), and the rate-limit and API-key
// scenarios. Run it from a test of your adapter's package:
//
//	func TestConformance(t *testing.T) { adaptertest.Run(t, newHarness) }
func Run(t *testing.T, newHarness HarnessMaker) {
	t.Run("Contract", func(t *testing.T) { runContract(t, newHarness) })
	t.Run("Race", func(t *testing.T) {
		runScenarios(t, newHarness, append(append(raceScenarios(), contentionScenarios()...), fallbackBurstScenarios()...))
	})
	t.Run("RateLimit", func(t *testing.T) { runScenarios(t, newHarness, rateLimitScenarios()) })
	t.Run("APIKey", func(t *testing.T) { runScenarios(t, newHarness, apiKeyScenarios()) })
}

// scenario is one concurrent case. run returns nil when the adapter kept
// the contract, or an error saying what went wrong, so that the suite's own
// tests can assert that a broken adapter is caught.
type scenario struct {
	name     string
	contract string                // the sentence of the contract it checks
	needs    func(features) string // why to skip; "" to run (nil: always run)
	run      func(ctx context.Context, f *Fixture) error
	// catchesNonAtomic: the suite's own test asserts that this scenario
	// fails against its deliberately non-atomic adapter.
	catchesNonAtomic bool
	// optionalTables: the scenario needs the optional models' tables
	// (rerolledKey, apikeyLimit), which the others go without, saving
	// their DDL in every fixture.
	optionalTables bool
}

func runScenarios(t *testing.T, newHarness HarnessMaker, list []scenario) {
	for _, sc := range list {
		t.Run(sc.name, func(t *testing.T) {
			f := newFixture(t, newHarness, sc.optionalTables)
			if sc.needs != nil {
				if why := sc.needs(f.caps); why != "" {
					t.Skip(why)
				}
			}
			if err := sc.run(f.Ctx, f); err != nil {
				t.Errorf("%s\ncontract: %s", err, sc.contract)
			}
		})
	}
}

// Fixture is one subtest's fresh harness, with tables named for that
// subtest and a core.DB on them.
type Fixture struct {
	Ctx     context.Context
	Harness Harness
	Schema  *core.Schema
	Adapter driver.Adapter
	DB      *core.DB
	caps    features
	tb      testing.TB
}

var tableSeq atomic.Int64

// NewFixture builds a harness with newHarness, creates uniquely named
// tables for the built-in models and the suite's [CounterModel], and wraps
// the adapter in a core.DB. Everything is released when the test ends.
func NewFixture(t *testing.T, newHarness HarnessMaker) *Fixture {
	t.Helper()
	return newFixture(t, newHarness, true)
}

// newFixture is NewFixture, with the optional models' tables only when
// optional is set.
func newFixture(t *testing.T, newHarness HarnessMaker, optional bool) *Fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	h, err := newHarness(ctx, t)
	if err != nil {
		t.Fatalf("making harness: %v", err)
	}
	t.Cleanup(h.Close)
	s := uniqueSchema(t.Name())
	if !optional {
		s = s.Without(core.ModelRerolledKey, core.ModelAPIKeyLimit)
	}
	a, err := h.MakeAdapter(ctx, s)
	if err != nil {
		t.Fatalf("making adapter: %v", err)
	}
	db, err := core.New(a, core.WithSchema(s))
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	return &Fixture{Ctx: ctx, Harness: h, Schema: s, Adapter: a, DB: db, caps: featuresOf(a, h.Capabilities()), tb: t}
}

// uniqueSchema names every table after the test and a process-wide
// sequence number, short enough for every dialect's identifier limit.
func uniqueSchema(testName string) *core.Schema {
	n := tableSeq.Add(1)
	tag := fmt.Sprintf("t%d_%d", time.Now().UnixNano()%1e6, n)
	_ = testName
	naming := core.Naming{Tables: map[string]string{}}
	for _, m := range append(core.BuiltinModels(), CounterModel()) {
		naming.Tables[m.Name] = strings.ToLower(m.Name) + "_" + tag
	}
	return core.MustSchema(naming, CounterModel())
}

// DBs returns n core.DBs on the fixture's tables, as n application servers
// would have: the first is f.DB; the others come from MakePeer when the
// harness declares SeveralPools, and share f.Adapter otherwise. opts are
// passed to core.New for every DB after the first.
func (f *Fixture) DBs(n int, opts ...core.Option) ([]*core.DB, error) {
	dbs := []*core.DB{f.DB}
	for len(dbs) < n {
		a := f.Adapter
		if f.caps.pools {
			var err error
			if a, err = f.Harness.MakePeer(f.Ctx, f.Schema); err != nil {
				return nil, fmt.Errorf("MakePeer: %w", err)
			}
		}
		db, err := core.New(a, append([]core.Option{core.WithSchema(f.Schema)}, opts...)...)
		if err != nil {
			return nil, err
		}
		dbs = append(dbs, db)
	}
	return dbs, nil
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
