package memory_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// bump is an update that adds 1 to the decimal at every key, an absent
// key counting as 0.
func bump(values []string, _ []bool) ([]bool, error) {
	write := make([]bool, len(values))
	for i, v := range values {
		n, _ := strconv.Atoi(v)
		values[i], write[i] = strconv.Itoa(n+1), true
	}
	return write, nil
}

// TestStorageUpdate: Update sees each key's value, writes only what fn
// marks, keeps a written key's expiry, stores a new key without one, and
// writes nothing when fn fails or a key is given twice.
func TestStorageUpdate(t *testing.T) {
	ctx := context.Background()
	s, c := newStorage()
	if err := s.Set(ctx, "a", "x", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Increment(ctx, "n", 41, time.Hour); err != nil {
		t.Fatal(err)
	}
	err := s.Update(ctx, []string{"a", "n", "new", "untouched"}, func(values []string, found []bool) ([]bool, error) {
		if !slices.Equal(values, []string{"x", "41", "", ""}) || !slices.Equal(found, []bool{true, true, false, false}) {
			t.Errorf("fn got %q, %v", values, found)
		}
		values[0], values[1], values[2], values[3] = "y", "42", "fresh", "ignored"
		return []bool{true, true, true}, nil // the fourth is not marked
	})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"a": "y", "n": "42", "new": "fresh"} {
		if v, ok, err := s.Get(ctx, key); v != want || !ok || err != nil {
			t.Errorf("Get(%s) = %q, %v, %v; want %q", key, v, ok, err, want)
		}
	}
	if _, ok, _ := s.Get(ctx, "untouched"); ok {
		t.Error("a key fn did not mark was written")
	}
	c.Advance(time.Minute)
	if _, ok, _ := s.Get(ctx, "a"); ok {
		t.Error("the written key lost its expiry")
	}
	c.Advance(time.Hour)
	if v, ok, _ := s.Get(ctx, "new"); !ok || v != "fresh" {
		t.Errorf("the new key expired: %q, %v", v, ok)
	}

	boom := errors.New("boom")
	err = s.Update(ctx, []string{"new"}, func(values []string, _ []bool) ([]bool, error) {
		values[0] = "changed"
		return []bool{true}, boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("a failing fn: Update = %v, want its error", err)
	}
	if v, _, _ := s.Get(ctx, "new"); v != "fresh" {
		t.Errorf("a failing fn wrote %q", v)
	}
	if err := s.Update(ctx, []string{"new", "new"}, bump); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("a key given twice: Update = %v, want ErrInvalid", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Update(cancelled, []string{"new"}, bump); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: Update = %v", err)
	}
	if v, _, _ := s.Get(ctx, "new"); v != "fresh" {
		t.Errorf("refused updates wrote %q", v)
	}
}

// TestStorageUpdateIsAtomic: concurrent updates over two keys, which the
// storage's many shards mostly put apart, lose no write. The same
// read-modify-write made of a Get and a Set loses some, which shows the
// race this test runs can catch a storage that is not atomic.
func TestStorageUpdateIsAtomic(t *testing.T) {
	ctx := context.Background()
	const goroutines, rounds = 8, 300
	keys := []string{"left", "right"}
	race := func(s *memory.Storage, update func() error) {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range goroutines {
			wg.Go(func() {
				<-start
				for range rounds {
					if err := update(); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		close(start)
		wg.Wait()
	}

	s := memory.NewStorage()
	race(s, func() error { return s.Update(ctx, keys, bump) })
	for _, k := range keys {
		if v, _, _ := s.Get(ctx, k); v != strconv.Itoa(goroutines*rounds) {
			t.Errorf("%s = %s after %d updates", k, v, goroutines*rounds)
		}
	}

	broken := memory.NewStorage()
	race(broken, func() error {
		for _, k := range keys {
			v, _, err := broken.Get(ctx, k)
			if err != nil {
				return err
			}
			runtime.Gosched() // where another caller's write slips in
			n, _ := strconv.Atoi(v)
			if err := broken.Set(ctx, k, strconv.Itoa(n+1), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if v, _, _ := broken.Get(ctx, keys[0]); v == strconv.Itoa(goroutines*rounds) {
		t.Errorf("a Get then a Set lost no update in %d: the race does not race", goroutines*rounds)
	}
}

// TestStorageSets: members are added once, removed, and a set that
// empties is gone.
func TestStorageSets(t *testing.T) {
	ctx := context.Background()
	s := memory.NewStorage()
	for _, m := range []string{"b", "a", "b"} {
		if err := s.AddToSet(ctx, "owners", m); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.SetMembers(ctx, "owners")
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("SetMembers = %v, %v; want a, b", got, err)
	}
	for _, m := range []string{"a", "b", "missing"} {
		if err := s.RemoveFromSet(ctx, "owners", m); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.SetMembers(ctx, "owners"); len(got) != 0 || err != nil {
		t.Errorf("after removing all: %v, %v", got, err)
	}
}
