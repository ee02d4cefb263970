package apikey

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/internal/testclock"
	"github.com/sluice-go/sluice/core/memory"
)

// eachMode runs fn on a database-mode and a storage-only manager with a
// test clock.
func eachMode(t *testing.T, fn func(t *testing.T, m *Manager, clock *testclock.Clock)) {
	t.Run("database", func(t *testing.T) {
		e := newEnv(t)
		fn(t, e.m, e.clock)
	})
	t.Run("storage", func(t *testing.T) {
		clock := newClock()
		m, err := NewStorageOnly(memory.NewStorage(memory.WithClock(clock.Now)), WithClock(clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		fn(t, m, clock)
	})
}

func mustVerify(t *testing.T, m *Manager, key string, want Code) Result {
	t.Helper()
	r, err := m.Verify(context.Background(), key)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if r.Code != want || r.Valid != (want == "") {
		t.Fatalf("Verify = %+v, want code %q", r, want)
	}
	return r
}

// ResetRateLimit opens a new window for a key at its limit, and the
// window then counts from the next request.
func TestUpdateResetsRateLimit(t *testing.T) {
	eachMode(t, func(t *testing.T, m *Manager, clock *testclock.Clock) {
		ctx := context.Background()
		plain, k, err := m.Create(ctx, CreateParams{ReferenceID: "u", RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
		if err != nil {
			t.Fatal(err)
		}
		mustVerify(t, m, plain, "")
		mustVerify(t, m, plain, "")
		mustVerify(t, m, plain, CodeRateLimited)
		after, err := m.Update(ctx, k.ID, UpdateParams{ResetRateLimit: true})
		if err != nil {
			t.Fatal(err)
		}
		if after.RequestCount != 0 || !after.LastRequest.IsZero() {
			t.Fatalf("after the reset: request count %d, last request %v; want 0 and none", after.RequestCount, after.LastRequest)
		}
		clock.Advance(time.Second)
		mustVerify(t, m, plain, "")
		mustVerify(t, m, plain, "")
		mustVerify(t, m, plain, CodeRateLimited)
		if got, err := m.Get(ctx, k.ID); err != nil || got.RequestCount != 2 {
			t.Fatalf("stored request count %v, %v; want 2", got, err)
		}
	})
}

// RestartRefill moves the next refill to one interval after the update.
func TestUpdateRestartsRefill(t *testing.T) {
	eachMode(t, func(t *testing.T, m *Manager, clock *testclock.Clock) {
		ctx := context.Background()
		plain, k, err := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(1), Refill: Refill{Interval: time.Hour, Amount: 5}, RateLimit: noRateLimit()})
		if err != nil {
			t.Fatal(err)
		}
		mustVerify(t, m, plain, "")
		clock.Advance(30 * time.Minute)
		restartedAt := clock.Now()
		after, err := m.Update(ctx, k.ID, UpdateParams{RestartRefill: true})
		if err != nil {
			t.Fatal(err)
		}
		if !after.LastRefillAt.Equal(restartedAt) {
			t.Fatalf("last refill %v, want the update's time %v", after.LastRefillAt, restartedAt)
		}
		clock.Advance(45 * time.Minute) // past the first schedule's refill, before the restarted one
		mustVerify(t, m, plain, CodeUsageExceeded)
		clock.Advance(15 * time.Minute) // one interval after the restart
		mustVerify(t, m, plain, "")
		if got, err := m.Get(ctx, k.ID); err != nil || got.Remaining == nil || *got.Remaining != 4 {
			t.Fatalf("stored %+v, %v; want 4 remaining after the refill", got, err)
		}
	})
}

// ListPage walks an owner's keys in id order, a page at a time, without
// another owner's, and refuses bad arguments.
func TestListPage(t *testing.T) {
	eachMode(t, func(t *testing.T, m *Manager, _ *testclock.Clock) {
		ctx := context.Background()
		var want []int64
		for i := range 7 {
			ref := "owner"
			if i%3 == 2 {
				ref = "other"
			}
			_, k, err := m.Create(ctx, CreateParams{ReferenceID: ref})
			if err != nil {
				t.Fatal(err)
			}
			if ref == "owner" {
				want = append(want, k.ID)
			}
		}
		var got []int64
		var pages int
		for after := int64(0); ; pages++ {
			keys, next, err := m.ListPage(ctx, "owner", after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) > 2 {
				t.Fatalf("page of %d keys, limit 2", len(keys))
			}
			for _, k := range keys {
				if k.ReferenceID != "owner" {
					t.Fatalf("key %d of %q listed for owner", k.ID, k.ReferenceID)
				}
				got = append(got, k.ID)
			}
			if next == 0 {
				break
			}
			if next != keys[len(keys)-1].ID {
				t.Fatalf("cursor %d, want the last id %d", next, keys[len(keys)-1].ID)
			}
			after = next
		}
		if len(got) != len(want) {
			t.Fatalf("listed %v, want %v", got, want)
		}
		for i := range got {
			if i > 0 && got[i] <= got[i-1] {
				t.Fatalf("ids %v are not ascending", got)
			}
		}
		all, err := m.List(ctx, "owner")
		if err != nil || len(all) != len(want) {
			t.Fatalf("List: %d keys, %v; want %d", len(all), err, len(want))
		}
		for _, bad := range []struct {
			after int64
			limit int
		}{{0, 0}, {0, MaxPageSize + 1}, {-1, 10}} {
			if _, _, err := m.ListPage(ctx, "owner", bad.after, bad.limit); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("ListPage(after %d, limit %d) = %v, want ErrInvalid", bad.after, bad.limit, err)
			}
		}
	})
}
