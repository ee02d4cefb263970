package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// pruneFixture makes rows whose windows started at the given offsets before
// now, now being 1 h after t0.
func pruneFixture(t *testing.T, ages map[string]time.Duration) (*core.DB, *clock) {
	t.Helper()
	db, _ := core.New(memory.New())
	c := newClock()
	now := time.Hour
	c.Set(now)
	for key, age := range ages {
		if _, err := db.Create(context.Background(), core.ModelRateLimit, map[string]any{
			"key": key, "count": int64(1), "lastRequest": t0.Add(now - age).UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	return db, c
}

func keys(t *testing.T, db *core.DB) map[string]bool {
	t.Helper()
	rows, err := db.FindMany(context.Background(), core.ModelRateLimit, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range rows {
		out[r.Text("key")] = true
	}
	return out
}

// TestPruneKeepsLiveRows: only rows whose window is over under the longest
// declared window go; the row exactly one longest window old is over.
func TestPruneKeepsLiveRows(t *testing.T) {
	longest := 10 * time.Minute
	db, c := pruneFixture(t, map[string]time.Duration{
		"fresh": 0, "recent": time.Minute, "almost": longest - time.Millisecond,
		"exact": longest, "old": 30 * time.Minute})
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithLongestWindow(longest))
	n, err := l.Prune(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want 2 rows deleted", n, err)
	}
	got := keys(t, db)
	for _, k := range []string{"fresh", "recent", "almost"} {
		if !got[k] {
			t.Errorf("live row %q was deleted", k)
		}
	}
	for _, k := range []string{"exact", "old"} {
		if got[k] {
			t.Errorf("expired row %q was kept", k)
		}
	}
	// The row kept at the edge is still counted by a rule of the longest window.
	d, err := l.Consume(context.Background(), "almost", ratelimit.Rule{Window: longest, Max: 1})
	if err != nil || d.Allowed {
		t.Errorf("row %q after pruning: %+v, %v; want denied (its window is live)", "almost", d, err)
	}
}

func TestPruneNeedsTheLongestWindow(t *testing.T) {
	db, c := pruneFixture(t, map[string]time.Duration{"old": 48 * time.Hour})
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now))
	if _, err := l.Prune(context.Background()); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Prune without a longest window: %v, want ErrInvalid", err)
	}
	if err := l.StartPruning(context.Background(), time.Minute, nil); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("StartPruning without a longest window: %v, want ErrInvalid", err)
	}
	if len(keys(t, db)) != 1 {
		t.Error("a row was deleted")
	}
}

func TestStartPruning(t *testing.T) {
	longest := time.Minute
	db, c := pruneFixture(t, map[string]time.Duration{"old": 2 * time.Minute, "live": time.Second})
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithLongestWindow(longest))
	tick := make(chan time.Time)
	ratelimit.SetTicker(l, tick)
	if err := l.StartPruning(context.Background(), time.Minute, func(err error) { t.Errorf("prune: %v", err) }); err != nil {
		t.Fatal(err)
	}
	if err := l.StartPruning(context.Background(), 0, nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("interval 0: %v, want ErrInvalid", err)
	}
	tick <- time.Time{} // received: the pruner is now pruning
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waited for the pruner, so the prune it received has finished.
	if got := keys(t, db); got["old"] || !got["live"] {
		t.Errorf("rows after a background prune: %v, want only live", got)
	}
	if err := l.StartPruning(context.Background(), time.Minute, nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("StartPruning after Close: %v, want ErrInvalid", err)
	}
}

func TestStartPruningStopsWithContext(t *testing.T) {
	db, c := pruneFixture(t, nil)
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithLongestWindow(time.Minute))
	tick := make(chan time.Time)
	ratelimit.SetTicker(l, tick)
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.StartPruning(ctx, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case tick <- time.Time{}:
		// The pruner may take one tick before it sees the context; it must
		// not take a second one.
		select {
		case tick <- time.Time{}:
			t.Fatal("the pruner kept running after its context ended")
		default:
		}
	default:
	}
	_ = l.Close()
}

func TestPruneMemoryStorage(t *testing.T) {
	c := newClock()
	s := ratelimit.Memory(100)
	l := newLimiter(t, s, ratelimit.WithClock(c.Now))
	ctx := context.Background()
	short, long := ratelimit.Rule{Window: time.Second, Max: 5}, ratelimit.Rule{Window: time.Hour, Max: 5}
	_, _ = l.Consume(ctx, "short", short)
	_, _ = l.Consume(ctx, "long", long)
	c.Set(time.Second)
	if n, err := l.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want the short window's counter", n, err)
	}
	if ratelimit.MemoryLen(s) != 1 {
		t.Errorf("%d counters left, want 1", ratelimit.MemoryLen(s))
	}
	if d, _ := l.Consume(ctx, "long", long); d.Remaining != 3 {
		t.Errorf("the live counter lost its count: remaining %d, want 3", d.Remaining)
	}
}
