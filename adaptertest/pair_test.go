package adaptertest

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// pairAdapter is core's memory adapter with an IncrementPair of its own,
// so that core.DB takes the cold limiter's one-statement path through it:
// honest (how 0), or broken in one way.
type pairAdapter struct {
	driver.Adapter
	how   pairBreakage
	reads *atomic.Int64
}

type pairBreakage int

const (
	// pairNotAtomic reads the row, then writes the sum by primary key
	// without its guard: the read-compute-write race.
	pairNotAtomic pairBreakage = iota + 1
	// pairWrongOther writes atomically but answers the other column's
	// upper bound (the limiter's now) for its value, as a packing that
	// dropped the remainder would.
	pairWrongOther
)

func (a pairAdapter) IncrementPair(ctx context.Context, t *driver.Table, where []driver.Where, inc driver.Delta, b driver.PairBounds) (int64, int64, bool, error) {
	if a.how == pairNotAtomic {
		cur, err := a.FindOne(ctx, t, where)
		if err != nil || cur == nil {
			return 0, 0, false, err
		}
		mine := a.reads.Add(1) // as nonAtomic's: the gap lasts until another caller has read
		for start := time.Now(); a.reads.Load() == mine && time.Since(start) < nonAtomicLatency; {
			runtime.Gosched()
		}
		v, o := cur[inc.Column].(int64)+inc.By, cur[b.Column].(int64)
		pk := t.PrimaryKey().Name
		_, err = a.Update(ctx, t, cols(core.Eq(pk, cur[pk])), []driver.Assignment{{Column: inc.Column, Value: v}})
		return v, o, err == nil, err
	}
	rec, err := a.Adapter.(driver.Incrementer).IncrementOne(ctx, t, where, []driver.Delta{inc}, nil)
	if err != nil || rec == nil {
		return 0, 0, false, err
	}
	v, o := rec[inc.Column].(int64), rec[b.Column].(int64)
	if a.how == pairWrongOther {
		o = b.Max
	}
	return v, o, true, nil
}

func (a pairAdapter) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	return a.Adapter.(driver.Incrementer).IncrementOne(ctx, t, where, inc, set)
}

func (a pairAdapter) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return a.Adapter.(driver.Transactor).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		return fn(ctx, pairAdapter{tx, a.how, a.reads})
	})
}

type pairHarness struct {
	m     *memory.Memory
	how   pairBreakage
	reads *atomic.Int64
}

func pairMaker(how pairBreakage) HarnessMaker {
	return func(context.Context, *testing.T) (Harness, error) {
		return pairHarness{m: memory.New(), how: how, reads: new(atomic.Int64)}, nil
	}
}

func (h pairHarness) MakeAdapter(context.Context, *core.Schema) (driver.Adapter, error) {
	return pairAdapter{h.m, h.how, h.reads}, nil
}

func (h pairHarness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	return h.MakeAdapter(ctx, s)
}

func (h pairHarness) Capabilities() Capabilities { return Capabilities{SeveralPools: true} }

func (h pairHarness) Close() {}

// TestColdBurstCatchesBrokenPairs is the proof for the cold-limiter race:
// through an IncrementPair that is not atomic, or that answers a wrong
// window start, both of its cases fail, every time; through an honest
// one, they pass.
func TestColdBurstCatchesBrokenPairs(t *testing.T) {
	for _, name := range []string{"ColdLimitersOnLiveRow/pools=1", "ColdLimitersOnLiveRow/pools=4"} {
		c := caseNamed(t, rateLimitCases(), name)
		t.Run(name, func(t *testing.T) {
			for _, how := range []pairBreakage{pairNotAtomic, pairWrongOther} {
				rec := runRecorded(t, pairMaker(how), c)
				require.False(t, rec.Skipped(), "%v", rec.messages)
				require.True(t, rec.Failed(), "a broken IncrementPair (%d) passed %s\ncontract: %s", how, c.name, c.contract)
				t.Logf("caught (%d): %s", how, rec.summary())
			}
			rec := runRecorded(t, pairMaker(0), c)
			require.False(t, rec.Failed(), "an honest IncrementPair failed: %v", rec.messages)
		})
	}
}
