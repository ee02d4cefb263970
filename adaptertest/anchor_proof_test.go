package adaptertest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// unguardedRefill is the memory adapter with the guard of API keys'
// refills taken out of every guarded write: it drops the conditions on
// lastRefillAt, as a verifier would that planned an anchored refill
// without guarding it. Everything else is kept, so only a refill that
// several callers plan at once can expose it. So that they do in every
// run, the first refill write waits for a second one (pair), which then
// was planned from the same spent state: the race the case exists for
// happens for certain rather than when the scheduler allows it.
type unguardedRefill struct {
	*memory.Memory
	pair *refillPair
}

// refillPair holds the first refill write until a second arrives, once.
type refillPair struct {
	once    sync.Once
	arrived chan struct{}
}

// meet is the first caller's wait for the second, or the second's arrival.
// A run with a single refill write (some future verifier that plans no
// concurrent refills) waits a minute, then lets it through: the proof then
// fails with its own message instead of hanging.
func (p *refillPair) meet(ctx context.Context) {
	first := false
	p.once.Do(func() { first = true })
	if !first {
		select {
		case p.arrived <- struct{}{}:
		default: // the pair has met
		}
		return
	}
	select {
	case <-p.arrived:
	case <-ctx.Done():
	case <-time.After(time.Minute):
	}
}

func (a unguardedRefill) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	if t.Model == core.ModelAPIKey {
		c, _ := t.Column("lastRefillAt")
		for _, s := range set {
			if s.Column == c.Name {
				a.pair.meet(ctx)
				break
			}
		}
		kept := make([]driver.Where, 0, len(where))
		for _, w := range where {
			if w.Column != c.Name {
				kept = append(kept, w)
			}
		}
		where = kept
	}
	return a.Memory.IncrementOne(ctx, t, where, inc, set)
}

type unguardedRefillHarness struct {
	m    *memory.Memory
	pair *refillPair
}

func (h unguardedRefillHarness) MakeAdapter(context.Context, *core.Schema) (driver.Adapter, error) {
	return unguardedRefill{h.m, h.pair}, nil
}

func (h unguardedRefillHarness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	return h.MakeAdapter(ctx, s)
}

func (h unguardedRefillHarness) Capabilities() Capabilities { return Capabilities{SeveralPools: true} }
func (h unguardedRefillHarness) Close()                     {}

// TestAnchoredRefillRaceCaught is the proof for the anchored-refill race:
// against an adapter that drops the refill's guard, the callers that
// planned the refill of one instant all refill, and the case fails, over
// one pool and several; the same adapter unbroken passes.
func TestAnchoredRefillRaceCaught(t *testing.T) {
	for _, name := range []string{"AnchoredRefill", "AnchoredRefillSeveralPools"} {
		t.Run(name, func(t *testing.T) {
			c := caseNamed(t, apiKeyCases(), name)
			rec := runRecorded(t, func(context.Context, *testing.T) (Harness, error) {
				return unguardedRefillHarness{memory.New(), &refillPair{arrived: make(chan struct{})}}, nil
			}, c)
			require.False(t, rec.Skipped(), "the case skipped: %v", rec.messages)
			require.True(t, rec.Failed(), "an adapter without the refill's guard passed %s\ncontract: %s", c.name, c.contract)
			t.Logf("caught: %s", rec.summary())
			rec = runRecorded(t, func(context.Context, *testing.T) (Harness, error) {
				return brokenHarness{m: memory.New(), victims: new(atomic.Int64)}, nil
			}, c)
			require.False(t, rec.Skipped() || rec.Failed(), "%v", rec.messages)
		})
	}
}
