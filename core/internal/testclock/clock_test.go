package testclock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/internal/testclock"
)

func TestClockMovesOnlyWhenMoved(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("UTC-5", -5*3600))
	c := testclock.New(t0)
	if got := c.Now(); !got.Equal(t0) || got.Location() != time.UTC {
		t.Fatalf("New(t0).Now() = %v, want %v in UTC", got, t0)
	}
	c.Advance(1500 * time.Millisecond)
	if got, want := c.Now(), t0.Add(1500*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after Advance: %v, want %v", got, want)
	}
	c.Set(t0.Add(-time.Hour))
	if got, want := c.Now(), t0.Add(-time.Hour); !got.Equal(want) {
		t.Fatalf("after Set: %v, want %v", got, want)
	}
	var zero testclock.Clock
	if got := zero.Now(); !got.Equal(time.Unix(0, 0)) {
		t.Fatalf("zero Clock reads %v, want the Unix epoch", got)
	}
}

// TestClockConcurrentAdvance is run under -race: 100 goroutines advance
// one clock by a millisecond each, and none of the steps is lost.
func TestClockConcurrentAdvance(t *testing.T) {
	c := testclock.New(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { c.Advance(time.Millisecond); _ = c.Now() })
	}
	wg.Wait()
	if got, want := c.Now(), time.Unix(0, 0).Add(100*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after 100 concurrent steps: %v, want %v", got, want)
	}
}
