package ratelimit_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// TestCostZeroChecksWithoutWriting: Check reads, reports whether one more
// request would pass, and changes nothing.
func TestCostZeroChecksWithoutWriting(t *testing.T) {
	ctx := context.Background()
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(0))
		d, err := l.Check(ctx, "peek", rule3)
		if err != nil || !d.Allowed || d.Remaining != 3 {
			t.Fatalf("check of a fresh key: %+v, %v; want allowed with 3 remaining", d, err)
		}
		for i := 0; i < 2; i++ {
			if _, err := l.Consume(ctx, "peek", rule3); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 3; i++ { // checking repeatedly spends nothing
			d, err = l.Check(ctx, "peek", rule3)
			if err != nil || !d.Allowed || d.Remaining != 1 {
				t.Fatalf("check %d after 2 requests: %+v, %v; want allowed with 1 remaining", i, d, err)
			}
		}
		if d, _ := l.Consume(ctx, "peek", rule3); !d.Allowed {
			t.Fatal("the third request was denied: a check spent budget")
		}
		d, err = l.Check(ctx, "peek", rule3)
		if err != nil || d.Allowed || d.Remaining != 0 {
			t.Fatalf("check of a full key: %+v, %v; want denied with 0 remaining", d, err)
		}
		if b.db != nil {
			row, _, _ := b.db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "peek"))
			if row.Int("count") != 3 || row.Int("lastRequest") != t0.UnixMilli() {
				t.Errorf("row after checks: %v, want count 3 and lastRequest %d", row, t0.UnixMilli())
			}
		}
	})
}

func TestCheckWritesNothing(t *testing.T) {
	m := memory.New()
	db, _ := core.New(m)
	c := newClock()
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now))
	ctx := context.Background()
	before := m.Calls()
	if _, err := l.Check(ctx, "never", rule3); err != nil {
		t.Fatal(err)
	}
	if got := m.Calls() - before; got != 1 {
		t.Errorf("check made %d calls, want 1 read", got)
	}
	if n, _ := db.Count(ctx, core.ModelRateLimit); n != 0 {
		t.Errorf("a check created %d rows", n)
	}
}

// TestMaxZeroDeniesEverything: unlike the reference, max 0 lets nothing
// through, and needs no storage at all.
func TestMaxZeroDeniesEverything(t *testing.T) {
	ctx := context.Background()
	rule := ratelimit.Rule{Window: time.Minute, Max: 0}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now))
		before := b.calls()
		for _, cost := range []int64{1, 0, 1} {
			d, err := l.ConsumeN(ctx, "zero", rule, cost)
			want := ratelimit.Decision{Limit: 0, Reset: t0.Add(time.Minute), RetryAfter: time.Minute}
			if err != nil || !reflect.DeepEqual(d, want) {
				t.Fatalf("cost %d: %+v, %v; want %+v", cost, d, err, want)
			}
		}
		if got := b.calls() - before; got != 0 {
			t.Errorf("%d storage calls, want 0", got)
		}
	})
}
