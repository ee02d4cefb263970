package keystore_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/internal/testclock"
)

// TestAnchorMonthEnds walks the anchors of the 31st from January: the
// last day of each shorter month, February's 28th or 29th, and the 31st
// again where there is one.
func TestAnchorMonthEnds(t *testing.T) {
	a := keystore.Anchor{Day: 31, TimeOfDay: 9*time.Hour + 30*time.Minute, Location: time.UTC}
	for _, year := range []int{2027, 2028} {
		feb := 28
		if year == 2028 {
			feb = 29
		}
		want := []time.Time{
			time.Date(year, 1, 31, 9, 30, 0, 0, time.UTC),
			time.Date(year, 2, feb, 9, 30, 0, 0, time.UTC),
			time.Date(year, 3, 31, 9, 30, 0, 0, time.UTC),
			time.Date(year, 4, 30, 9, 30, 0, 0, time.UTC),
			time.Date(year, 5, 31, 9, 30, 0, 0, time.UTC),
		}
		at := time.Date(year, 1, 15, 0, 0, 0, 0, time.UTC)
		for i, w := range want {
			if got := a.Next(at); !got.Equal(w) {
				t.Fatalf("%d: anchor %d after %v = %v, want %v", year, i, at, got, w)
			}
			if got := a.Latest(w); !got.Equal(w) {
				t.Fatalf("Latest(%v) = %v, want the anchor itself", w, got)
			}
			if got := a.Latest(w.Add(-time.Millisecond)); i > 0 && !got.Equal(want[i-1]) {
				t.Fatalf("Latest(1 ms before %v) = %v, want %v", w, got, want[i-1])
			}
			at = w
		}
	}
}

// TestAnchorDST checks anchors across the clock changes of Europe/Berlin
// in 2027 (Mar 28: 02:00 → 03:00, a 23-hour day; Oct 31: 03:00 → 02:00,
// a 25-hour day): the wall-clock time holds, so the UTC instant moves.
func TestAnchorDST(t *testing.T) {
	berlin := testclock.Zone(t, "Europe/Berlin")
	// 09:30 local: 08:30 UTC in winter, 07:30 UTC in summer.
	a := keystore.Anchor{Day: 28, TimeOfDay: 9*time.Hour + 30*time.Minute, Location: berlin}
	feb := a.Next(time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC))
	mar := a.Next(feb)
	if want := time.Date(2027, 2, 28, 8, 30, 0, 0, time.UTC); !feb.Equal(want) {
		t.Errorf("February's anchor %v, want %v", feb.UTC(), want)
	}
	if want := time.Date(2027, 3, 28, 7, 30, 0, 0, time.UTC); !mar.Equal(want) {
		t.Errorf("March's anchor (the 23-hour day) %v, want %v", mar.UTC(), want)
	}
	// On the day of the change, at the hour the clocks skip: once, at
	// 03:30 summer time (01:30 UTC), the offset from before the change.
	skipped := keystore.Anchor{Day: 28, TimeOfDay: 2*time.Hour + 30*time.Minute, Location: berlin}
	got := skipped.Next(time.Date(2027, 3, 27, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2027, 3, 28, 1, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("anchor in the skipped hour %v, want %v", got.UTC(), want)
	}
	if next := skipped.Next(got); next.Month() != time.April {
		t.Errorf("the skipped-hour anchor repeats: next %v", next)
	}
	// At the hour passed twice (Oct 31, 02:30 CEST = 00:30 UTC, then
	// 02:30 CET = 01:30 UTC): one anchor, the first.
	twice := keystore.Anchor{Day: 31, TimeOfDay: 2*time.Hour + 30*time.Minute, Location: berlin}
	got = twice.Next(time.Date(2027, 10, 30, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2027, 10, 31, 0, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("anchor in the repeated hour %v, want %v", got.UTC(), want)
	}
	if next := twice.Next(got); next.Month() != time.November {
		t.Errorf("the repeated-hour anchor repeats: next %v", next)
	}
}

// TestAnchorProperties checks, at random instants in several zones, that
// Latest(t) ≤ t < Next(t) with no anchor between, and that Due and
// Interval agree with the interval rule of Apply.
func TestAnchorProperties(t *testing.T) {
	locs := []*time.Location{time.UTC, testclock.Zone(t, "Europe/Berlin"), testclock.Zone(t, "America/Santiago"), testclock.Zone(t, "Australia/Lord_Howe")}
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := range 5000 {
		a := keystore.Anchor{Day: 1 + r.IntN(31), TimeOfDay: time.Duration(r.Int64N(24*3600*1000)) * time.Millisecond, Location: locs[i%len(locs)]}
		now := base + r.Int64N(3*366*24*3600*1000)
		tm := time.UnixMilli(now)
		latest, next := a.Latest(tm), a.Next(tm)
		if latest.After(tm) || !next.After(tm) || !a.Next(latest).Equal(next) {
			t.Fatalf("%+v at %v: latest %v, next %v, next after latest %v", a, tm, latest, next, a.Next(latest))
		}
		if gap := next.Sub(latest); gap < 27*24*time.Hour || gap > 32*24*time.Hour {
			t.Fatalf("%+v at %v: anchors %v apart", a, tm, gap)
		}
		iv := a.Interval(now)
		for _, last := range []int64{latest.UnixMilli() - 1, latest.UnixMilli(), now} {
			due, wait := a.Due(last, now)
			if rule := last <= now-iv; due != rule {
				t.Fatalf("%+v at %v, last %d: Due %v, the interval rule %v", a, tm, last, due, rule)
			}
			if !due && wait != next.UnixMilli()-now {
				t.Fatalf("wait %d, want %d", wait, next.UnixMilli()-now)
			}
		}
	}
}

// TestAnchorProblems checks what Problem refuses, and that it names it.
func TestAnchorProblems(t *testing.T) {
	for _, c := range []struct {
		a    keystore.Anchor
		want string
	}{
		{keystore.Anchor{Day: 0, Location: time.UTC}, "refill day 0"},
		{keystore.Anchor{Day: 32, Location: time.UTC}, "refill day 32"},
		{keystore.Anchor{Day: 1, TimeOfDay: -time.Millisecond, Location: time.UTC}, "time of day -1ms"},
		{keystore.Anchor{Day: 1, TimeOfDay: 24 * time.Hour, Location: time.UTC}, "time of day 24h0m0s"},
		{keystore.Anchor{Day: 1, TimeOfDay: time.Microsecond, Location: time.UTC}, "whole number of milliseconds"},
		{keystore.Anchor{Day: 1}, "location is nil"},
	} {
		if got := c.a.Problem(); !strings.Contains(got, c.want) {
			t.Errorf("%+v: Problem %q, want it to name %q", c.a, got, c.want)
		}
	}
	for _, a := range []keystore.Anchor{{Day: 1, Location: time.UTC}, {Day: 31, TimeOfDay: 24*time.Hour - time.Millisecond, Location: time.Local}} {
		if p := a.Problem(); p != "" {
			t.Errorf("%+v refused: %s", a, p)
		}
	}
}
