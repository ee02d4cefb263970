package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// TestAdvanceTAT: driver.TATAdvancer's contract one step at a time, and the
// expiry at the tat by the storage's clock.
func TestAdvanceTAT(t *testing.T) {
	at := time.Unix(0, 0)
	s := memory.NewStorage(memory.WithClock(func() time.Time { return at }))
	ctx := context.Background()
	for i, c := range []struct {
		now, inc, limit, tat int64
		ok                   bool
	}{
		{1000, 0, 10, 1000, true},  // none: reads now, writes nothing
		{1000, 6, 10, 1006, true},  // advances from now
		{1000, 6, 10, 1006, false}, // 1012 − 1000 > 10: refused, unchanged
		{1001, 0, 4, 1006, false},  // a check: 1006 − 1001 > 4
		{1002, 6, 10, 1012, true},  // fits exactly
	} {
		tat, ok, err := s.AdvanceTAT(ctx, "k", c.now, c.inc, c.limit)
		if err != nil || tat != c.tat || ok != c.ok {
			t.Fatalf("step %d: AdvanceTAT(now %d, +%d, limit %d) = %d, %v, %v; want %d, %v", i, c.now, c.inc, c.limit, tat, ok, err, c.tat, c.ok)
		}
	}
	// Written at caller time 1002 with tat 1012: gone 10 ms later.
	at = at.Add(9 * time.Millisecond)
	if v, ok, _ := s.Get(ctx, "k"); !ok || v != "1012" {
		t.Fatalf("9 ms later: %q, %v; want 1012 still stored", v, ok)
	}
	at = at.Add(time.Millisecond)
	if _, ok, _ := s.Get(ctx, "k"); ok {
		t.Fatal("the key outlived its tat")
	}
	if _, _, err := s.AdvanceTAT(ctx, "k", 1, -1, 1); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("negative increment: %v, want ErrInvalid", err)
	}
	_ = s.Set(ctx, "text", "abc", 0)
	if _, _, err := s.AdvanceTAT(ctx, "text", 1, 1, 1); err == nil {
		t.Fatal("a value that is not a time was advanced")
	}
}
