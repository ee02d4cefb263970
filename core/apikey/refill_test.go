package apikey

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/memory"
)

func berlin(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	return loc
}

// sameAnchor compares anchors by their zones' names: one read back holds
// the location loaded by that name.
func sameAnchor(a, b *keystore.Anchor) bool {
	return a != nil && b != nil && a.Day == b.Day && a.TimeOfDay == b.TimeOfDay && a.Location.String() == b.Location.String()
}

// inDatabaseModes runs test in database mode, with the transaction
// fallback, and in cached mode: the modes that keep anchored refills.
func inDatabaseModes(t *testing.T, test func(t *testing.T, e *env)) {
	t.Run("database", func(t *testing.T) { test(t, newEnv(t)) })
	t.Run("fallback", func(t *testing.T) {
		mem := memory.New()
		test(t, newEnvOn(t, mem, mem.WithoutIncrementOne()))
	})
	t.Run("cached", func(t *testing.T) { test(t, newEnv(t, WithCache(memory.NewStorage(), time.Hour))) })
}

// TestAnchoredRefill: a key refilled on the 31st at 09:30 in Berlin is
// refilled once on February's last day and once on March 31st, at 09:30
// on the wall clock across the change to summer time (a 23-hour day), at
// the first verification after each instant and not a millisecond before.
func TestAnchoredRefill(t *testing.T) {
	loc := berlin(t)
	inDatabaseModes(t, func(t *testing.T, e *env) {
		e.clock.Set(time.Date(2027, 1, 31, 10, 0, 0, 0, loc))
		a := &keystore.Anchor{Day: 31, TimeOfDay: 9*time.Hour + 30*time.Minute, Location: loc}
		key, k := e.create(t, CreateParams{Remaining: quota(2), RateLimit: noRateLimit(), Refill: Refill{Amount: 3, Anchor: a}})
		if !sameAnchor(k.Refill.Anchor, a) || k.Refill.Amount != 3 || k.Refill.Interval != 0 {
			t.Fatalf("created key's refill %+v", k.Refill)
		}
		wantCode(t, e.verify(t, key), "")
		wantCode(t, e.verify(t, key), "")
		feb := time.Date(2027, 2, 28, 9, 30, 0, 0, loc)
		e.clock.Set(feb.Add(-time.Millisecond))
		r := e.verify(t, key)
		wantCode(t, r, CodeUsageExceeded)
		if r.TryAgainIn != time.Millisecond {
			t.Fatalf("try again in %v, want 1ms (February's last day)", r.TryAgainIn)
		}
		e.clock.Set(feb)
		r = e.verify(t, key, Cost(2))
		wantCode(t, r, "")
		if remaining(t, r.Key) != 1 || !r.Key.LastRefillAt.Equal(feb) {
			t.Fatalf("after February's refill: remaining %d, last refill %v; want 1, %v", remaining(t, r.Key), r.Key.LastRefillAt, feb.UTC())
		}
		wantCode(t, e.verify(t, key), "")
		wantCode(t, e.verify(t, key), CodeUsageExceeded) // once per instant
		mar := time.Date(2027, 3, 31, 9, 30, 0, 0, loc)
		if _, off := mar.Zone(); off != 2*3600 {
			t.Fatalf("March 31 at 09:30 in Berlin is not summer time: %v", mar)
		}
		e.clock.Set(mar.Add(-time.Millisecond))
		r = e.verify(t, key)
		wantCode(t, r, CodeUsageExceeded)
		// 31 days, one of them of 23 hours.
		if want := mar.Sub(feb.Add(time.Millisecond)) + time.Millisecond; r.TryAgainIn != time.Millisecond || want != 31*24*time.Hour-time.Hour {
			t.Fatalf("try again in %v; February to March %v", r.TryAgainIn, want)
		}
		e.clock.Set(mar.Add(time.Hour))
		wantCode(t, e.verify(t, key, Cost(3)), "")
		got := e.get(t, k.ID)
		if remaining(t, got) != 0 || !got.LastRefillAt.Equal(mar.Add(time.Hour)) || !sameAnchor(got.Refill.Anchor, a) {
			t.Fatalf("stored: remaining %d, last refill %v, refill %+v", remaining(t, got), got.LastRefillAt, got.Refill)
		}
	})
}

// TestAnchoredRefillBetterAuthColumns: the apikey row of an anchored key
// keeps refillAmount with refillInterval NULL, so that Better Auth, which
// refills only with both, never refills it; the anchor is in apikeyRefill.
func TestAnchoredRefillBetterAuthColumns(t *testing.T) {
	e := newEnv(t)
	_, k := e.create(t, CreateParams{Remaining: quota(5), Refill: Refill{Amount: 5, Anchor: &keystore.Anchor{Day: 15, TimeOfDay: 9 * time.Hour, Location: time.UTC}}})
	ctx := context.Background()
	row, ok, err := e.db.FindOne(ctx, core.ModelAPIKey, core.Eq("id", k.ID))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, set := row.NullInt("refillInterval"); set || row.Int("refillAmount") != 5 {
		t.Fatalf("apikey row: refillInterval set %v, refillAmount %d; want NULL and 5", set, row.Int("refillAmount"))
	}
	a, ok, err := e.db.FindOne(ctx, core.ModelAPIKeyRefill, core.Eq("keyId", k.ID))
	if err != nil || !ok || a.Int("day") != 15 || a.Int("timeOfDay") != 9*3600*1000 || a.Text("location") != "UTC" {
		t.Fatalf("apikeyRefill row %v, %v, %v", a, ok, err)
	}
	// Removing the refill removes the anchor.
	if _, err := e.m.Update(ctx, k.ID, UpdateParams{Refill: &Refill{}}); err != nil {
		t.Fatal(err)
	}
	if n, err := e.db.Count(ctx, core.ModelAPIKeyRefill); err != nil || n != 0 {
		t.Fatalf("%d anchors left, %v", n, err)
	}
}

// TestAnchoredRefillRefusesBadInput: each meaningless anchored refill is
// core.ErrInvalid naming what is wrong, in Create and Update, before any
// write.
func TestAnchoredRefillRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, k := e.create(t, CreateParams{Remaining: quota(1)})
	_, unlimited := e.create(t, CreateParams{})
	anchor := func(day int, tod time.Duration, loc *time.Location) *keystore.Anchor {
		return &keystore.Anchor{Day: day, TimeOfDay: tod, Location: loc}
	}
	for _, c := range []struct {
		r    Refill
		want string
	}{
		{Refill{Amount: 1, Anchor: anchor(0, 0, time.UTC)}, "refill day 0"},
		{Refill{Amount: 1, Anchor: anchor(32, 0, time.UTC)}, "refill day 32"},
		{Refill{Amount: 1, Anchor: anchor(1, 24*time.Hour, time.UTC)}, "time of day 24h0m0s"},
		{Refill{Amount: 1, Anchor: anchor(1, -time.Hour, time.UTC)}, "time of day -1h0m0s"},
		{Refill{Amount: 1, Anchor: anchor(1, time.Microsecond, time.UTC)}, "whole number of milliseconds"},
		{Refill{Amount: 1, Anchor: anchor(1, 0, nil)}, "location is nil"},
		{Refill{Amount: 1, Anchor: anchor(1, 0, time.Local)}, `"Local" cannot be stored`},
		{Refill{Amount: 1, Anchor: anchor(1, 0, time.FixedZone("Europe/Berlin", 5*3600))}, "cannot be stored"},
		{Refill{Amount: 1, Interval: time.Hour, Anchor: anchor(1, 0, time.UTC)}, "both an Interval"},
		{Refill{Anchor: anchor(1, 0, time.UTC)}, "positive Amount"},
		{Refill{Amount: -1, Anchor: anchor(1, 0, time.UTC)}, "positive Amount"},
	} {
		_, _, err := e.m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(1), Refill: c.r})
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Refill") {
			t.Errorf("Create with %+v: err = %v, want ErrInvalid naming Refill and %q", c.r, err, c.want)
		}
		_, err = e.m.Update(ctx, k.ID, UpdateParams{Refill: &c.r})
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Update with %+v: err = %v, want ErrInvalid naming %q", c.r, err, c.want)
		}
	}
	good := Refill{Amount: 1, Anchor: anchor(1, 0, time.UTC)}
	if _, _, err := e.m.Create(ctx, CreateParams{ReferenceID: "u", Refill: good}); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "needs a quota") {
		t.Errorf("Create without a quota: err = %v, want ErrInvalid: needs a quota", err)
	}
	if _, err := e.m.Update(ctx, unlimited.ID, UpdateParams{Refill: &good}); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "needs a quota") {
		t.Errorf("Update of an unlimited key: err = %v, want ErrInvalid: needs a quota", err)
	}
	if n, err := e.db.Count(ctx, core.ModelAPIKey); err != nil || n != 2 {
		t.Fatalf("%d keys, %v: a refused Create wrote", n, err)
	}
	if n, err := e.db.Count(ctx, core.ModelAPIKeyRefill); err != nil || n != 0 {
		t.Fatalf("%d anchors, %v: a refused change wrote", n, err)
	}
	if got := e.get(t, unlimited.ID); got.Refill != (Refill{}) || got.Remaining != nil {
		t.Fatalf("the unlimited key changed: %+v", got)
	}
}

// TestAnchoredRefillNeedsTheTable: without the apikeyRefill table,
// creating or updating an anchored key names the table and how to make
// it; interval refills work as before.
func TestAnchoredRefillNeedsTheTable(t *testing.T) {
	mem := memory.New()
	e := newEnvOn(t, mem, schemaFailing{mem, core.ModelAPIKeyRefill})
	ctx := context.Background()
	r := Refill{Amount: 1, Anchor: &keystore.Anchor{Day: 1, Location: time.UTC}}
	_, _, err := e.m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(1), Refill: r})
	if !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), "apikeyRefill") || !strings.Contains(err.Error(), "CreateTables") {
		t.Fatalf("Create: err = %v, want ErrSchema naming apikeyRefill and CreateTables", err)
	}
	key, k := e.create(t, CreateParams{Remaining: quota(1), RateLimit: noRateLimit(), Refill: Refill{Interval: time.Hour, Amount: 1}})
	if _, err := e.m.Update(ctx, k.ID, UpdateParams{Refill: &r}); !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), "apikeyRefill") {
		t.Fatalf("Update: err = %v, want ErrSchema naming apikeyRefill", err)
	}
	if _, err := e.m.Update(ctx, k.ID, UpdateParams{Refill: &Refill{Interval: time.Minute, Amount: 2}}); err != nil {
		t.Fatalf("Update to an interval refill: %v", err)
	}
	wantCode(t, e.verify(t, key), "")
	e.clock.Advance(time.Minute)
	if r := e.verify(t, key, Cost(2)); !r.Valid {
		t.Fatalf("the interval refill: %+v", r)
	}
}

// TestAnchoredRefillStorageOnly: a storage-only manager refuses anchored
// refills, with ErrUnsupported naming database mode, and writes nothing.
func TestAnchoredRefillStorageOnly(t *testing.T) {
	m, _, _ := newStoreEnv(t)
	ctx := context.Background()
	r := Refill{Amount: 1, Anchor: &keystore.Anchor{Day: 1, Location: time.UTC}}
	if _, _, err := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(1), Refill: r}); !errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "database mode") {
		t.Fatalf("Create: err = %v, want ErrUnsupported naming database mode", err)
	}
	_, k, err := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(1), Refill: Refill{Interval: time.Hour, Amount: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Update(ctx, k.ID, UpdateParams{Refill: &r}); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("Update: err = %v, want ErrUnsupported", err)
	}
	got, err := m.Get(ctx, k.ID)
	if err != nil || got.Refill != (Refill{Interval: time.Hour, Amount: 1}) {
		t.Fatalf("after the refused Update: %+v, %v", got, err)
	}
	if list, err := m.List(ctx, "u"); err != nil || len(list) != 1 {
		t.Fatalf("%d keys, %v: the refused Create wrote", len(list), err)
	}
	if _, err := m.Update(ctx, k.ID, UpdateParams{Refill: &Refill{}}); err != nil {
		t.Fatalf("removing a refill: %v", err)
	}
}

// TestAnchorChange: changing a key's anchor applies the new one to the
// time of its last refill, and a verification planned under the old one
// (a remembered key) misses its write and decides again on the new one.
func TestAnchorChange(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	utc := func(d, h int) time.Time { return time.Date(2027, 5, d, h, 0, 0, 0, time.UTC) }
	e.clock.Set(utc(2, 0))
	key, k := e.create(t, CreateParams{Remaining: quota(3), RateLimit: noRateLimit(), Refill: Refill{Amount: 5, Anchor: &keystore.Anchor{Day: 1, Location: time.UTC}}})
	wantCode(t, e.verify(t, key), "") // remembers the key under the day-1 anchor
	e.clock.Set(utc(10, 0))
	// Another manager moves the anchor to the 5th: under it the refill of
	// May 5th is due (created on the 2nd, never refilled).
	other, err := New(e.db, WithClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	after, err := other.Update(ctx, k.ID, UpdateParams{Refill: &Refill{Amount: 5, Anchor: &keystore.Anchor{Day: 5, Location: time.UTC}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := k.CreatedAt.Add(-time.Millisecond); !after.LastRefillAt.Equal(want) {
		t.Fatalf("LastRefillAt after the change %v, want %v (creation, 1 ms earlier)", after.LastRefillAt, want)
	}
	// The first manager still remembers day 1, under which nothing is due
	// and 2 are left: its write, a decrement, must miss.
	r := e.verify(t, key)
	wantCode(t, r, "")
	if remaining(t, r.Key) != 4 || r.Key.Refill.Anchor.Day != 5 {
		t.Fatalf("after the change: remaining %d, refill %+v; want 4 (May 5th's refill), day 5", remaining(t, r.Key), r.Key.Refill)
	}
	wantCode(t, e.verify(t, key, Cost(4)), "")
	wantCode(t, e.verify(t, key), CodeUsageExceeded)
	// An anchor instant as last refill moves later, not earlier.
	e.clock.Set(utc(5, 0).AddDate(0, 1, 0))
	wantCode(t, e.verify(t, key), "") // refilled on June 5th at 00:00
	if got := e.get(t, k.ID); !got.LastRefillAt.Equal(utc(5, 0).AddDate(0, 1, 0)) {
		t.Fatalf("June's refill at %v", got.LastRefillAt)
	}
	after, err = other.Update(ctx, k.ID, UpdateParams{Refill: &Refill{Amount: 5, Anchor: &keystore.Anchor{Day: 5, Location: time.UTC}}})
	if err != nil || !after.LastRefillAt.Equal(utc(5, 0).AddDate(0, 1, 0).Add(time.Millisecond)) || remaining(t, after) != 4 {
		t.Fatalf("re-anchoring on the instant: %+v, %v", after, err)
	}
	wantCode(t, e.verify(t, key, Cost(4)), "")
	wantCode(t, e.verify(t, key), CodeUsageExceeded) // June's refill is not taken twice
}
