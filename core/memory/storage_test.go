package memory_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testclock"
	"github.com/sluice-go/sluice/core/memory"
)

func newStorage() (*memory.Storage, *testclock.Clock) {
	c := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return memory.NewStorage(memory.WithClock(c.Now)), c
}

func TestStorageGetSetDelete(t *testing.T) {
	s, c := newStorage()
	ctx := context.Background()
	if _, ok, err := s.Get(ctx, "a"); ok || err != nil {
		t.Fatalf("Get of a missing key: ok=%v err=%v", ok, err)
	}
	if err := s.Set(ctx, "a", "1", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "forever", "x", 0); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := s.Get(ctx, "a"); !ok || v != "1" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	c.Advance(time.Second) // expiry is the instant the TTL ends
	if _, ok, _ := s.Get(ctx, "a"); ok {
		t.Error("value still there when its TTL ended")
	}
	c.Advance(time.Hour)
	if v, ok, _ := s.Get(ctx, "forever"); !ok || v != "x" {
		t.Error("a value without TTL expired")
	}
	if err := s.Delete(ctx, "forever"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "never-there"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	if _, ok, _ := s.Get(ctx, "forever"); ok {
		t.Error("deleted value still there")
	}
	if err := s.Set(ctx, "a", "1", -time.Second); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("negative ttl: %v, want ErrInvalid", err)
	}
}

func TestStorageIncrementKeepsItsTTL(t *testing.T) {
	s, c := newStorage()
	ctx := context.Background()
	got, err := s.Increment(ctx, "n", 2, 10*time.Second)
	if err != nil || got != (driver.Counter{Value: 2, TTL: 10 * time.Second}) {
		t.Fatalf("first Increment = %+v, %v", got, err)
	}
	c.Advance(4 * time.Second)
	got, err = s.Increment(ctx, "n", 3, time.Hour) // the ttl of an existing counter is ignored
	if err != nil || got != (driver.Counter{Value: 5, TTL: 6 * time.Second}) {
		t.Fatalf("second Increment = %+v, %v; want 5 with 6s left", got, err)
	}
	if v, _, _ := s.Get(ctx, "n"); v != "5" {
		t.Errorf("Get of a counter = %q, want 5", v)
	}
	c.Advance(6 * time.Second)
	got, _ = s.Increment(ctx, "n", 1, time.Minute)
	if got != (driver.Counter{Value: 1, TTL: time.Minute}) {
		t.Errorf("Increment after expiry = %+v, want a new counter", got)
	}
	for _, ttl := range []time.Duration{0, -time.Second} {
		if _, err := s.Increment(ctx, "n", 1, ttl); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("ttl %v: %v, want ErrInvalid", ttl, err)
		}
	}
	_ = s.Set(ctx, "text", "hello", 0)
	if _, err := s.Increment(ctx, "text", 1, time.Second); err == nil {
		t.Error("incrementing text succeeded")
	}
	_ = s.Set(ctx, "num", "41", 0)
	if got, err := s.Increment(ctx, "num", 1, time.Second); err != nil || got.Value != 42 {
		t.Errorf("incrementing a decimal value: %+v, %v", got, err)
	}
}

func TestStorageIncrementBounded(t *testing.T) {
	s, c := newStorage()
	ctx := context.Background()
	if got, ok, err := s.IncrementBounded(ctx, "b", 4, 3, time.Minute); ok || err != nil || got != (driver.Counter{}) {
		t.Fatalf("too big on a missing key: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := s.Get(ctx, "b"); ok {
		t.Fatal("a refused increment created the counter")
	}
	if got, ok, _ := s.IncrementBounded(ctx, "b", 2, 3, time.Minute); !ok || got.Value != 2 {
		t.Fatalf("first: %+v %v", got, ok)
	}
	c.Advance(time.Second)
	if got, ok, _ := s.IncrementBounded(ctx, "b", 2, 3, time.Minute); ok || got != (driver.Counter{Value: 2, TTL: 59 * time.Second}) {
		t.Fatalf("over max: %+v %v; want refused, unchanged", got, ok)
	}
	if got, ok, _ := s.IncrementBounded(ctx, "b", 1, 3, time.Minute); !ok || got.Value != 3 {
		t.Fatalf("up to max: %+v %v", got, ok)
	}
}

func TestStorageConcurrentIncrement(t *testing.T) {
	s, _ := newStorage()
	ctx := context.Background()
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				if _, err := s.Increment(ctx, "total", 1, time.Minute); err != nil {
					t.Error(err)
				}
				if _, ok, err := s.IncrementBounded(ctx, "bounded", 1, 100, time.Minute); err != nil {
					t.Error(err)
				} else if ok {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if v, _, _ := s.Get(ctx, "total"); v != "640" {
		t.Errorf("total = %s, want 640", v)
	}
	if admitted.Load() != 100 {
		t.Errorf("bounded admitted %d, want 100", admitted.Load())
	}
}

func TestStorageSweepsExpiredKeys(t *testing.T) {
	s, c := newStorage()
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		_ = s.Set(ctx, fmt.Sprint("old", i), "x", time.Second)
	}
	c.Advance(time.Second)
	for i := 0; i < 3000; i++ {
		_ = s.Set(ctx, fmt.Sprint("new", i), "x", time.Minute)
	}
	// Each of the 32 shards holds about 31 expired and 94 live keys, so
	// each passes its first sweep size (64) after the clock moved.
	if n := s.Len(); n != 3000 {
		t.Errorf("%d entries held, want the 3000 live ones", n)
	}
}

func TestStorageHonoursContext(t *testing.T) {
	s, _ := newStorage()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Increment(ctx, "k", 1, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("Increment on a cancelled context: %v", err)
	}
}

// TestStorageCountsEveryCall checks Calls over keys spread across every
// shard, a call refused for its context included: the count is kept per
// shard, and Calls must add them all up.
func TestStorageCountsEveryCall(t *testing.T) {
	s, _ := newStorage()
	ctx := context.Background()
	const keys = 500
	for i := range keys {
		if _, err := s.Increment(ctx, fmt.Sprint("k", i), 1, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _, _ = s.Get(cancelled, "k0")
	if got := s.Calls(); got != keys+1 {
		t.Errorf("Calls() = %d after %d calls", got, keys+1)
	}
}

// TestStorageDefaultClockExpires runs the default clock in a synctest
// bubble, whose time only moves when every goroutine waits: the counter
// lives until its TTL has passed on that clock, and not a moment longer.
func TestStorageDefaultClockExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memory.NewStorage()
		ctx := context.Background()
		if _, err := s.Increment(ctx, "n", 1, time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(999 * time.Millisecond)
		if got, _ := s.Increment(ctx, "n", 1, time.Second); got != (driver.Counter{Value: 2, TTL: time.Millisecond}) {
			t.Fatalf("before the TTL ends: %+v, want 2 with 1ms left", got)
		}
		time.Sleep(time.Millisecond)
		if _, ok, _ := s.Get(ctx, "n"); ok {
			t.Error("the counter outlived its TTL")
		}
	})
}

func ExampleStorage() {
	s := memory.NewStorage()
	ctx := context.Background()
	c, _ := s.Increment(ctx, "hits", 1, time.Minute)
	c, _ = s.Increment(ctx, "hits", 1, time.Minute)
	_, ok, _ := s.IncrementBounded(ctx, "hits", 1, 2, time.Minute)
	fmt.Println(c.Value, ok)
	// Output:
	// 2 false
}
