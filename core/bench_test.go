package core_test

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// BenchmarkIncrementOne measures core.DB's own cost around a native
// IncrementOne on the in-memory adapter: validation, name mapping and
// conversion of the returned row.
func BenchmarkIncrementOne(b *testing.B) {
	ctx := context.Background()
	db, err := core.New(memory.New())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k"}); err != nil {
		b.Fatal(err)
	}
	req := core.IncrementRequest{
		Model:     core.ModelRateLimit,
		Where:     []core.Where{core.Eq("key", "k"), core.Gt("lastRequest", int64(-1)), core.Lte("count", int64(1<<62))},
		Increment: map[string]int64{"count": 1},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := db.IncrementOne(ctx, req); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
