package route_test

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/route"
)

// Node-affine routing over the three nodes of one cluster: each key's
// calls go to one node, the same in every process, and move to the next
// node while that one is unavailable. Here three adapters on one memory
// store stand in for three pools, one per Galera node.
func ExampleNew() {
	ctx := context.Background()
	store := memory.New()
	r, err := route.New([]driver.Adapter{store, store, store})
	if err != nil {
		panic(err)
	}
	db, err := core.New(r)
	if err != nil {
		panic(err)
	}
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "client-1", "count": 0}); err != nil {
		panic(err)
	}
	row, ok, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
		Where: []core.Where{core.Eq("key", "client-1")}, Increment: map[string]int64{"count": 1}})
	if err != nil || !ok {
		panic(err)
	}
	fmt.Println("count:", row.Int("count"))
	var calls int64
	for _, n := range r.Nodes() {
		calls += n.Calls
	}
	fmt.Println("calls, all on one node:", calls, r.Nodes()[r.NodeOf(mustTable(db), []driver.Where{{Column: "key", Op: driver.OpEq, Value: "client-1"}})].Calls)
	// Output:
	// count: 1
	// calls, all on one node: 2 2
}

func mustTable(db *core.DB) *driver.Table {
	t, ok := db.Schema().Table(core.ModelRateLimit)
	if !ok {
		panic("no rate-limit table")
	}
	return t
}
