package adaptertest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// unguardedRefill is the memory adapter with the guard of API keys'
// refills taken out of every guarded write: it drops the conditions on
// lastRefillAt, as a verifier would that planned an anchored refill
// without guarding it. Everything else is kept, so only a refill that
// several callers plan at once can expose it.
type unguardedRefill struct{ *memory.Memory }

func (a unguardedRefill) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	if t.Model == core.ModelAPIKey {
		c, _ := t.Column("lastRefillAt")
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

type unguardedRefillHarness struct{ m *memory.Memory }

func (h unguardedRefillHarness) MakeAdapter(context.Context, *core.Schema) (driver.Adapter, error) {
	return unguardedRefill{h.m}, nil
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
				return unguardedRefillHarness{memory.New()}, nil
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
