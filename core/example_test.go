package core_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// A guarded decrement: take one unit of a budget only while some are left.
// The where clauses select the row and guard the write in one atomic step.
func ExampleDB_IncrementOne() {
	ctx := context.Background()
	db, err := core.New(memory.New())
	if err != nil {
		panic(err)
	}
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "client-1", "count": 2}); err != nil {
		panic(err)
	}
	take := core.IncrementRequest{
		Model:     core.ModelRateLimit,
		Where:     []core.Where{core.Eq("key", "client-1"), core.Gt("count", 0)},
		Increment: map[string]int64{"count": -1},
	}
	for i := 1; i <= 3; i++ {
		row, ok, err := db.IncrementOne(ctx, take)
		switch {
		case err != nil:
			panic(err)
		case ok:
			fmt.Printf("request %d: allowed, %d left\n", i, row.Int("count"))
		default:
			fmt.Printf("request %d: denied\n", i)
		}
	}
	// Output:
	// request 1: allowed, 1 left
	// request 2: allowed, 0 left
	// request 3: denied
}

// New picks the adapter's native IncrementOne when it has one, and the
// transaction fallback otherwise.
func ExampleNew() {
	store := memory.New()
	native, _ := core.New(store)
	emulated, _ := core.New(store.WithoutIncrementOne())
	fmt.Println("memory:", native.NativeIncrement())
	fmt.Println("memory without IncrementOne:", emulated.NativeIncrement())
	t, _ := native.Schema().Table(core.ModelRateLimit)
	fmt.Println("table:", t.Name)
	// Output:
	// memory: true
	// memory without IncrementOne: false
	// table: rate_limit
}

// Create fills in the schema's defaults and refuses a duplicate unique key.
func ExampleDB_Create() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	row, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "client-1"})
	fmt.Println(row.Int("id"), row.Text("key"), row.Int("count"), row.Int("lastRequest"), err)
	_, err = db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "client-1"})
	fmt.Println(errors.Is(err, core.ErrConflict))
	fmt.Println(err)
	// Output:
	// 1 client-1 0 0 <nil>
	// true
	// sluice: Create rateLimit: unique conflict: rate_limit.key = client-1
}

// Better Auth's names let a Go service share tables with a Better Auth
// deployment.
func ExampleNaming() {
	s, _ := core.NewSchema(core.Naming{Preset: core.BetterAuth})
	fmt.Print(s)
	// Output:
	// rateLimit(id, key, count, lastRequest)
	// apikey(id, configId, name, start, prefix, key, referenceId, enabled, rateLimitEnabled, rateLimitTimeWindow, rateLimitMax, requestCount, remaining, refillInterval, refillAmount, lastRefillAt, lastRequest, expiresAt, createdAt, updatedAt, permissions, metadata)
	// rerolledKey(id, key, keyId, expiresAt, createdAt)
	// apikeyLimit(id, key, keyId, owner, name, max, window, count, windowStart)
	// apikeyRefill(id, keyId, day, timeOfDay, location)
}

// A rate limiter that does not know a window's start learns it, with the
// new count, from the write that admits: count + 1 while the window (its
// start in lastRequest) is live and has room.
func ExampleDB_IncrementPair() {
	ctx := context.Background()
	db, err := core.New(memory.New())
	if err != nil {
		panic(err)
	}
	const start, now, window, max = 1_000, 1_500, 1_000, 3
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "client-1", "count": 1, "lastRequest": start}); err != nil {
		panic(err)
	}
	admit := core.PairRequest{
		Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", "client-1")},
		Field: "count", By: 1, Max: max,
		Other: "lastRequest", OtherMin: now - window + 1, OtherMax: now,
	}
	for i := 1; i <= 3; i++ {
		count, started, ok, err := db.IncrementPair(ctx, admit)
		switch {
		case err != nil:
			panic(err)
		case ok:
			fmt.Printf("request %d: allowed, count %d, window ends at %d\n", i, count, started+window)
		default:
			fmt.Printf("request %d: denied\n", i)
		}
	}
	// Output:
	// request 1: allowed, count 2, window ends at 2000
	// request 2: allowed, count 3, window ends at 2000
	// request 3: denied
}

// A request IncrementPair cannot keep exact is refused, naming what is
// wrong, before anything is written.
