package core_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

func TestIncrementPairRefusesBadRequests(t *testing.T) {
	ctx := context.Background()
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k", "count": 1, "lastRequest": 10}); err != nil {
		t.Fatal(err)
	}
	good := core.PairRequest{Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", "k")},
		Field: "count", By: 1, Max: 5, Other: "lastRequest", OtherMin: 0, OtherMax: 100}
	for name, c := range map[string]struct {
		edit func(*core.PairRequest)
		says string
	}{
		"zero delta":          {func(r *core.PairRequest) { r.By = 0 }, "By is 0"},
		"unnegatable delta":   {func(r *core.PairRequest) { r.By = math.MinInt64 }, "negatable"},
		"negative max":        {func(r *core.PairRequest) { r.Max = -1 }, "Max -1"},
		"max − by overflows":  {func(r *core.PairRequest) { r.By, r.Max = -2, math.MaxInt64 }, "Max − By"},
		"bounds reversed":     {func(r *core.PairRequest) { r.OtherMin = 101 }, "OtherMin 101 is above OtherMax 100"},
		"same field twice":    {func(r *core.PairRequest) { r.Other = "count" }, `both "count"`},
		"unknown field":       {func(r *core.PairRequest) { r.Field = "nope" }, `unknown field "nope"`},
		"not an int":          {func(r *core.PairRequest) { r.Other = "key" }, `"key" cannot be Other`},
		"unknown model":       {func(r *core.PairRequest) { r.Model = "nope" }, `"nope"`},
		"unknown where field": {func(r *core.PairRequest) { r.Where = []core.Where{core.Eq("nope", 1)} }, `"nope"`},
	} {
		t.Run(name, func(t *testing.T) {
			req := good
			c.edit(&req)
			_, _, ok, err := db.IncrementPair(ctx, req)
			if ok || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("IncrementPair = ok %v, %v; want core.ErrInvalid saying %q", ok, err, c.says)
			}
			row, _, err := db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "k"))
			if err != nil || row.Int("count") != 1 {
				t.Fatalf("after a refused request the count is %d (%v), want 1: nothing written", row.Int("count"), err)
			}
		})
	}
}

// The guard's bounds hold on every adapter, the fallback's included: a
// row outside them is not written, whatever else where says.
func TestIncrementPairGuardsItsBounds(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	for name, db := range map[string]*core.DB{"native": mustNew(t, store), "fallback": mustNew(t, store.WithoutIncrementOne())} {
		t.Run(name, func(t *testing.T) {
			key := "k-" + name
			if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": key, "count": 4, "lastRequest": 50}); err != nil {
				t.Fatal(err)
			}
			req := core.PairRequest{Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", key)},
				Field: "count", By: 1, Max: 5, Other: "lastRequest", OtherMin: 51, OtherMax: 100}
			if _, _, ok, err := db.IncrementPair(ctx, req); ok || err != nil {
				t.Fatalf("lastRequest 50 below OtherMin 51: ok %v, %v; want no match", ok, err)
			}
			req.OtherMin = 50
			if v, o, ok, err := db.IncrementPair(ctx, req); !ok || err != nil || v != 5 || o != 50 {
				t.Fatalf("in bounds: %d, %d, ok %v, %v; want 5, 50, true", v, o, ok, err)
			}
			if _, _, ok, err := db.IncrementPair(ctx, req); ok || err != nil {
				t.Fatalf("count 5 + 1 above Max 5: ok %v, %v; want no match", ok, err)
			}
		})
	}
}
