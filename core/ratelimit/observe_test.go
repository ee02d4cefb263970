package ratelimit_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// An observer sees every decision as the caller got it: allowed, denied
// (from the storage, then from the denial cache), a check, and an error.
func TestObserverSeesEveryDecision(t *testing.T) {
	ctx := context.Background()
	rule := oncePerMinute
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		var (
			mu     sync.Mutex
			events []ratelimit.Event
		)
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithObserver(func(_ context.Context, e ratelimit.Event) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}))
		var got []ratelimit.Decision
		for _, cost := range []int64{1, 1, 1, 0} {
			d, err := l.ConsumeN(ctx, "k", rule, cost)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, d)
		}
		_, bad := l.Consume(ctx, "", rule)
		if len(events) != 5 {
			t.Fatalf("%d events, want 5", len(events))
		}
		for i, want := range []string{"allowed", "denied", "denied", "denied", "error"} {
			e := events[i]
			if e.Outcome() != want || e.Rule != rule || e.Latency < 0 || e.Start.IsZero() {
				t.Errorf("event %d: %+v, outcome %s; want %s", i, e, e.Outcome(), want)
			}
			if i < 4 && (!reflect.DeepEqual(e.Decision, got[i]) || e.Key != "k" || e.Err != nil) {
				t.Errorf("event %d: decision %+v key %q err %v; the caller got %+v", i, e.Decision, e.Key, e.Err, got[i])
			}
		}
		if events[3].Cost != 0 || events[0].Cost != 1 {
			t.Errorf("costs %d and %d, want 1 and 0", events[0].Cost, events[3].Cost)
		}
		if !errors.Is(events[4].Err, core.ErrInvalid) || events[4].Err.Error() != bad.Error() {
			t.Errorf("error event %v, the caller got %v", events[4].Err, bad)
		}
		want := map[string]string{"database": "database", "database-fallback": "database", "memory": "memory", "secondary": "secondary"}[b.name]
		if events[0].Storage != want {
			t.Errorf("storage %q, want %q", events[0].Storage, want)
		}
	})
}

func TestObserverNilRefused(t *testing.T) {
	if _, err := ratelimit.New(ratelimit.Memory(10), ratelimit.WithObserver(nil)); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("New(WithObserver(nil)) = %v, want ErrInvalid", err)
	}
}
