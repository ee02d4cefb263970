package adaptertest

import (
	"context"
	"fmt"
	"math"
	"runtime"
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

// catchesNonAtomic reports whether c claims to catch the non-atomic
// adapter: every race that reaches the adapter's own IncrementOne, that is
// every one not on core's fallback, but for those that race something
// else (the adapter's retries, a hostile key, a row deleted mid-decision)
// or is sequential (the edges against the big-integer model, the stored
// text, the answer read back after another manager changed the key).
func catchesNonAtomic(c dbCase) bool {
	switch c.name {
	case "DeadlockVictimsRetried", "HostileKeysAreStorable", "RowDeletedBetweenReadAndWrite", "EdgesAgainstBigModel", "PolicyAtTheEdges", "StoredTextRoundTrips", "AnswerIsStoredKey":
		return false
	case "PolicyAllOrNothingGCRA/pools=4":
		// GCRA's writes inside the policy's transaction, which the memory
		// adapter serialises, do not reach the broken increment's window;
		// TestPolicyRaceCaught proves this case with an adapter that rolls
		// nothing back.
		return false
	}
	// The transactional-charging cases need the ORM's own transactions,
	// which the non-atomic harness lacks: TestInTxCasesCatchBrokenCharging
	// proves them.
	return c.needs&(viaFallback|txHandles) == 0
}

// TestScenariosCatchNonAtomicAdapter is the proof that the suite can fail:
// every race case that claims to catch the broken adapter must fail
// against it, every time.
func TestScenariosCatchNonAtomicAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("the proof needs every round of each race; -short runs one")
	}
	catchers := 0
	for group, cases := range map[string][]dbCase{"Race": raceCases(), "RateLimit": rateLimitCases(), "APIKey": apiKeyCases()} {
		for _, c := range cases {
			if !catchesNonAtomic(c) {
				continue
			}
			catchers++
			t.Run(group+"/"+c.name, func(t *testing.T) {
				rec := runRecorded(t, newNonAtomicHarness, c)
				require.False(t, rec.Skipped(), "the case skipped against the non-atomic adapter, so it proves nothing: %v", rec.messages)
				require.True(t, rec.Failed(), "the non-atomic adapter passed %s\ncontract: %s", c.name, c.contract)
				t.Logf("caught: %s", rec.summary())
			})
		}
	}
	// 8 races (4 bodies, one pool and several), 28 rate-limit bursts (the
	// lease race, the three calendar bursts, two policies and the two
	// cold-limiter bursts among them) and 16 API-key races
	require.Equal(t, 52, catchers, "cases that claim to catch the non-atomic adapter")
}

// TestNonAtomicAdapterPassesSequentialContract shows that what the race
// cases catch is the missing atomicity and nothing else: called one at a
// time, the broken adapter keeps every contract case.
func TestNonAtomicAdapterPassesSequentialContract(t *testing.T) {
	runCases(t, contractCases(), func(t *testing.T, needs need) *Fixture { return newFixture(t, newNonAtomicHarness, needs) })
}

// TestFallbackVariantsSurviveNonAtomicAdapter shows the other side: the
// races that go through core's transaction fallback never call the
// adapter's IncrementOne, so they pass even over the broken one.
func TestFallbackVariantsSurviveNonAtomicAdapter(t *testing.T) {
	var onFallback []dbCase
	for _, c := range raceCases() {
		if c.needs&viaFallback != 0 && c.name != "FallbackBurstGetsThrough" {
			onFallback = append(onFallback, c)
		}
	}
	require.Len(t, onFallback, 8)
	runCases(t, onFallback, func(t *testing.T, needs need) *Fixture { return newFixture(t, newNonAtomicHarness, needs) })
}
