package adaptertest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// countingAdapter stands for your own adapter: here, core's in-memory one
// wrapped to count IncrementOne calls.
type countingAdapter struct {
	*memory.Memory
	increments atomic.Int64 // the suite calls it from many goroutines at once
}

func (a *countingAdapter) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	a.increments.Add(1)
	return a.Memory.IncrementOne(ctx, t, where, inc, set)
}

// myHarness gives the suite a fresh countingAdapter for every subtest.
// A database harness would create the tables of s in MakeAdapter and drop
// them in Close.
type myHarness struct{ a *countingAdapter }

func (h *myHarness) MakeAdapter(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	return h.a, nil
}

func (h *myHarness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	return nil, fmt.Errorf("several pools are not declared")
}

// Capabilities declares only what the suite cannot find out itself: that
// countingAdapter has IncrementOne and (from *memory.Memory) Transaction,
// it learns by type assertion.
func (h *myHarness) Capabilities() adaptertest.Capabilities {
	return adaptertest.Capabilities{SeveralPools: false}
}

func (h *myHarness) Close() {}

// newHarness is the adaptertest.HarnessMaker to pass to Run:
//
//	func TestConformance(t *testing.T) { adaptertest.Run(t, newHarness) }
func newHarness(ctx context.Context, t *testing.T) (adaptertest.Harness, error) {
	return &myHarness{a: &countingAdapter{Memory: memory.New()}}, nil
}

// This example shows the harness a custom adapter needs. In a test,
// adaptertest.Run(t, newHarness) runs the whole suite on it; here the
// harness's adapter serves one guarded increment, as the suite's cases do.
func Example() {
	ctx := context.Background()
	h, _ := newHarness(ctx, nil) // a real maker may use t to skip; this one does not
	defer h.Close()
	schema := core.MustSchema(core.Naming{})
	a, _ := h.MakeAdapter(ctx, schema)
	db, _ := core.New(a, core.WithSchema(schema))

	_, _ = db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "client-1"})
	for i := 0; i < 3; i++ {
		row, ok, err := db.IncrementOne(ctx, core.IncrementRequest{
			Model:     core.ModelRateLimit,
			Where:     []core.Where{core.Eq("key", "client-1"), core.Lt("count", 2)},
			Increment: map[string]int64{"count": 1},
		})
		fmt.Println(row.Int("count"), ok, err)
	}
	fmt.Println("native:", db.NativeIncrement(), "calls:", h.(*myHarness).a.increments.Load())
	// Output:
	// 1 true <nil>
	// 2 true <nil>
	// 0 false <nil>
	// native: true calls: 3
}
