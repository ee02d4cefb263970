package adaptertest

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// nonAtomic is the deliberately broken adapter: its IncrementOne reads the
// row the guard selects, computes the new values in Go, and writes them by
// primary key without evaluating the guard again, the classic
// read-compute-write race. Everything else is the wrapped adapter's, so it
// keeps the sequential contract and only concurrency can expose it.
type nonAtomic struct {
	driver.Adapter
	reads *atomic.Int64 // IncrementOne reads so far, shared by every handle on one store
}

// nonAtomicLatency bounds how long the broken IncrementOne waits between
// its read and its write, as a database round trip would take.
const nonAtomicLatency = 2 * time.Millisecond

func (a nonAtomic) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	cur, err := a.Adapter.FindOne(ctx, t, where)
	if err != nil || cur == nil {
		return nil, err
	}
	// The round trip between the read and the write. It lasts until another
	// caller has read too (or the latency has passed, when no one else is
	// calling), so that concurrent callers overlap whatever the scheduler
	// does: the flaw shows every time there is concurrency to show it.
	// Yielding, not sleeping, keeps the goroutine runnable.
	mine := a.reads.Add(1)
	for start := time.Now(); a.reads.Load() == mine && time.Since(start) < nonAtomicLatency; {
		runtime.Gosched()
	}
	write := append([]driver.Assignment(nil), set...)
	for _, d := range inc {
		if v, ok := cur[d.Column].(int64); ok {
			// It keeps every sequential rule, overflow included.
			if (d.By > 0 && v > math.MaxInt64-d.By) || (d.By < 0 && v < math.MinInt64-d.By) {
				return nil, fmt.Errorf("%w: %d + %d overflows int64", core.ErrInvalid, v, d.By)
			}
			write = append(write, driver.Assignment{Column: d.Column, Value: v + d.By})
		}
	}
	pk := t.PrimaryKey().Name
	return a.Adapter.Update(ctx, t, cols(core.Eq(pk, cur[pk])), write)
}

// Transaction hands the function a transaction adapter that is just as broken.
func (a nonAtomic) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return a.Adapter.(driver.Transactor).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		return fn(ctx, nonAtomic{tx, a.reads})
	})
}

// nonAtomicHarness serves an adapter that implements every optional
// interface and declares SeveralPools, so that no scenario skips.
type nonAtomicHarness struct {
	m     *memory.Memory
	reads *atomic.Int64
}

func newNonAtomicHarness(context.Context, *testing.T) (Harness, error) {
	return nonAtomicHarness{m: memory.New(), reads: new(atomic.Int64)}, nil
}

func (h nonAtomicHarness) MakeAdapter(context.Context, *core.Schema) (driver.Adapter, error) {
	return nonAtomic{h.m, h.reads}, nil
}

func (h nonAtomicHarness) MakePeer(context.Context, *core.Schema) (driver.Adapter, error) {
	return nonAtomic{h.m, h.reads}, nil
}

func (h nonAtomicHarness) Capabilities() Capabilities {
	return Capabilities{SeveralPools: true}
}

func (h nonAtomicHarness) Close() {}

// TestScenariosCatchNonAtomicAdapter is the proof that the suite can fail:
// every scenario marked catchesNonAtomic must report an error against the
// broken adapter, every time.
func TestScenariosCatchNonAtomicAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("the proof needs every round of each race; -short runs one")
	}
	groups := map[string][]scenario{
		"Race":      raceScenarios(),
		"RateLimit": rateLimitScenarios(),
		"APIKey":    apiKeyScenarios(),
	}
	catchers := 0
	for _, group := range []string{"Race", "RateLimit", "APIKey"} {
		for _, sc := range groups[group] {
			if !sc.catchesNonAtomic {
				continue
			}
			catchers++
			t.Run(group+"/"+sc.name, func(t *testing.T) {
				f := newFixture(t, newNonAtomicHarness, sc.optionalTables)
				if sc.needs != nil {
					why := sc.needs(f.caps)
					require.Empty(t, why, "the scenario skips against the non-atomic adapter, so it proves nothing")
				}
				err := sc.run(f.Ctx, f)
				require.Error(t, err, "the non-atomic adapter passed %s\ncontract: %s", sc.name, sc.contract)
				t.Logf("caught: %s", strings.SplitN(err.Error(), "\n", 2)[0])
			})
		}
	}
	// two variants (one pool, several pools) of each of the four races
	require.GreaterOrEqual(t, catchers, 8, "scenarios marked catchesNonAtomic")
}

// TestNonAtomicAdapterPassesSequentialContract shows that what the race
// scenarios catch is the missing atomicity and nothing else: called one at
// a time, the broken adapter keeps every contract case.
func TestNonAtomicAdapterPassesSequentialContract(t *testing.T) {
	runContract(t, newNonAtomicHarness)
}

// TestFallbackVariantsSurviveNonAtomicAdapter shows the other side: the
// race scenarios that go through core's transaction fallback never call the
// adapter's IncrementOne, so they pass even over the broken one.
func TestFallbackVariantsSurviveNonAtomicAdapter(t *testing.T) {
	runs := 0
	for _, sc := range raceScenarios() {
		if sc.catchesNonAtomic {
			continue
		}
		runs++
		t.Run(sc.name, func(t *testing.T) {
			f := NewFixture(t, newNonAtomicHarness)
			require.Empty(t, sc.needs(f.caps))
			require.NoError(t, sc.run(f.Ctx, f))
		})
	}
	require.Positive(t, runs)
}
