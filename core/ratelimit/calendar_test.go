package ratelimit_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/internal/testclock"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// TestCalendarPeriods: the period holding an instant, in its zone: days of
// 23 and 25 hours across daylight-saving changes both ways (New York and
// Berlin), month ends, a leap February, a year's end, an ISO week's
// Monday, a midnight the zone skips (São Paulo, 2018) and a day it skips
// (Apia, 30 December 2011).
func TestCalendarPeriods(t *testing.T) {
	h, d := time.Hour, 24*time.Hour
	for _, c := range []struct {
		zone       string
		cal        ratelimit.Calendar
		at         string // local wall time
		start, end string // local wall times
		length     time.Duration
	}{
		{"America/New_York", ratelimit.Day, "2026-03-08 12:00", "2026-03-08 00:00", "2026-03-09 00:00", 23 * h},
		{"America/New_York", ratelimit.Day, "2026-03-08 23:59:59.999", "2026-03-08 00:00", "2026-03-09 00:00", 23 * h},
		{"America/New_York", ratelimit.Day, "2026-11-01 01:30", "2026-11-01 00:00", "2026-11-02 00:00", 25 * h},
		{"America/New_York", ratelimit.Day, "2026-11-02 00:00", "2026-11-02 00:00", "2026-11-03 00:00", 24 * h},
		{"Europe/Berlin", ratelimit.Day, "2026-03-29 04:00", "2026-03-29 00:00", "2026-03-30 00:00", 23 * h},
		{"Europe/Berlin", ratelimit.Day, "2026-10-25 02:30", "2026-10-25 00:00", "2026-10-26 00:00", 25 * h},
		{"Europe/Berlin", ratelimit.Month, "2026-03-31 23:59:59.999", "2026-03-01 00:00", "2026-04-01 00:00", 31*d - h},
		{"Europe/Berlin", ratelimit.Month, "2026-10-01 00:00", "2026-10-01 00:00", "2026-11-01 00:00", 31*d + h},
		{"UTC", ratelimit.Month, "2026-01-31 23:59:59.999", "2026-01-01 00:00", "2026-02-01 00:00", 31 * d},
		{"UTC", ratelimit.Month, "2026-02-01 00:00", "2026-02-01 00:00", "2026-03-01 00:00", 28 * d},
		{"UTC", ratelimit.Month, "2028-02-29 12:00", "2028-02-01 00:00", "2028-03-01 00:00", 29 * d},
		{"UTC", ratelimit.Day, "2028-02-29 12:00", "2028-02-29 00:00", "2028-03-01 00:00", 24 * h},
		{"UTC", ratelimit.Month, "2026-04-30 23:59:59.999", "2026-04-01 00:00", "2026-05-01 00:00", 30 * d},
		{"America/New_York", ratelimit.Year, "2026-12-31 23:59:59.999", "2026-01-01 00:00", "2027-01-01 00:00", 365 * d},
		{"America/New_York", ratelimit.Year, "2027-01-01 00:00", "2027-01-01 00:00", "2028-01-01 00:00", 365 * d},
		{"UTC", ratelimit.Year, "2028-07-01 00:00", "2028-01-01 00:00", "2029-01-01 00:00", 366 * d},
		// 2026-12-06 is a Sunday, 2026-12-07 a Monday.
		{"Europe/Berlin", ratelimit.Week, "2026-12-06 23:59:59.999", "2026-11-30 00:00", "2026-12-07 00:00", 7 * d},
		{"Europe/Berlin", ratelimit.Week, "2026-12-07 00:00", "2026-12-07 00:00", "2026-12-14 00:00", 7 * d},
		{"Europe/Berlin", ratelimit.Week, "2026-10-28 12:00", "2026-10-26 00:00", "2026-11-02 00:00", 7 * d},
		{"Europe/Berlin", ratelimit.Week, "2026-10-25 12:00", "2026-10-19 00:00", "2026-10-26 00:00", 7*d + h},
		// São Paulo's clocks went from 00:00 to 01:00 on 2018-11-04: that
		// day began at 01:00 and lasted 23 hours.
		{"America/Sao_Paulo", ratelimit.Day, "2018-11-04 12:00", "2018-11-04 01:00", "2018-11-05 00:00", 23 * h},
		{"America/Sao_Paulo", ratelimit.Day, "2018-11-03 23:59:59.999", "2018-11-03 00:00", "2018-11-04 01:00", 24 * h},
		// Apia skipped 30 December 2011: the 29th ended at the 31st's start.
		{"Pacific/Apia", ratelimit.Day, "2011-12-29 23:59:59.999", "2011-12-29 00:00", "2011-12-31 00:00", 24 * h},
	} {
		loc := testclock.Zone(t, c.zone)
		parse := func(s string) time.Time {
			t.Helper()
			layout := "2006-01-02 15:04"
			if len(s) > len(layout) {
				layout += ":05.999"
			}
			v, err := time.ParseInLocation(layout, s, loc)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		at := parse(c.at)
		start, end := c.cal.Period(at, loc)
		if !start.Equal(parse(c.start)) || !end.Equal(parse(c.end)) || end.Sub(start) != c.length {
			t.Errorf("%s %v at %s: [%v, %v) (%v), want [%s, %s) (%v)", c.zone, c.cal, c.at, start, end, end.Sub(start), c.start, c.end, c.length)
		}
	}
}

// TestCalendarPeriodsTile: over five years every 7 hours and 13 minutes,
// in zones with daylight-saving time, half-hour offsets, a skipped
// midnight and a skipped day, each instant lies in its period, the period
// of its start and of its last millisecond is itself, and the next period
// starts where it ends; its start is local midnight of its first day,
// unless that midnight did not exist; its length is within Longest.
func TestCalendarPeriodsTile(t *testing.T) {
	for _, name := range []string{"UTC", "America/New_York", "Europe/Berlin", "America/Sao_Paulo", "Pacific/Apia", "Australia/Lord_Howe", "Asia/Kolkata"} {
		loc := testclock.Zone(t, name)
		for _, cal := range []ratelimit.Calendar{ratelimit.Day, ratelimit.Week, ratelimit.Month, ratelimit.Year} {
			for at := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC); at.Year() < 2015; at = at.Add(7*time.Hour + 13*time.Minute) {
				s, e := cal.Period(at, loc)
				ms := time.Millisecond
				s2, e2 := cal.Period(s, loc)
				s3, e3 := cal.Period(e.Add(-ms), loc)
				n, _ := cal.Period(e, loc)
				switch {
				case at.Before(s) || !at.Before(e):
					t.Fatalf("%s %v: %v not in [%v, %v)", name, cal, at, s, e)
				case !s2.Equal(s) || !e2.Equal(e) || !s3.Equal(s) || !e3.Equal(e) || !n.Equal(e):
					t.Fatalf("%s %v at %v: [%v, %v) does not tile", name, cal, at, s, e)
				case e.Sub(s) > cal.Longest():
					t.Fatalf("%s %v at %v: %v long, Longest %v", name, cal, at, e.Sub(s), cal.Longest())
				case s.Hour() != 0 || s.Minute() != 0:
					// Only a midnight that did not exist starts later.
					if before := s.Add(-ms); before.Day() == s.Day() {
						t.Fatalf("%s %v at %v: starts at %v, not at midnight", name, cal, at, s)
					}
				}
			}
		}
	}
}

// calendarAt moves c to a wall time in loc.
func calendarAt(c *clock, loc *time.Location, y int, m time.Month, d, hh, mm, ss, ms int) time.Time {
	at := time.Date(y, m, d, hh, mm, ss, ms*int(time.Millisecond), loc)
	c.Clock.Set(at)
	return at
}

// TestCalendarDayAcrossDST: a daily quota in New York on the day the
// clocks go forward (23 hours) and the day they go back (25 hours), on
// every storage: Reset is the next local midnight, the window ends there
// and not 24 hours after its start, and the database row's lastRequest is
// the day's start, which every process computes alike.
func TestCalendarDayAcrossDST(t *testing.T) {
	ny := testclock.Zone(t, "America/New_York")
	rule := ratelimit.Rule{Max: 2, Calendar: ratelimit.Day, Location: ny}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now))
		ctx := context.Background()
		for _, day := range []struct {
			d      int
			m      time.Month
			length time.Duration
		}{{8, time.March, 23 * time.Hour}, {1, time.November, 25 * time.Hour}} {
			start := time.Date(2026, day.m, day.d, 0, 0, 0, 0, ny)
			end := time.Date(2026, day.m, day.d+1, 0, 0, 0, 0, ny)
			if end.Sub(start) != day.length {
				t.Fatalf("the test's day is %v long, want %v", end.Sub(start), day.length)
			}
			expect := func(what string, cost int64, allowed bool, remaining int64) {
				t.Helper()
				got, err := l.ConsumeN(ctx, "daily", rule, cost)
				want := ratelimit.Decision{Allowed: allowed, Limit: 2, Remaining: remaining, Reset: end.UTC()}
				if !allowed {
					want.RetryAfter = end.Sub(c.Now())
				}
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("%v %s: %+v, %v; want %+v", start, what, got, err, want)
				}
			}
			calendarAt(c, ny, 2026, day.m, day.d, 0, 0, 0, 0)
			expect("at midnight", 1, true, 1)
			// 24 hours after the start would be past the 23-hour day's end.
			calendarAt(c, ny, 2026, day.m, day.d, 22, 30, 0, 0)
			expect("late", 1, true, 0)
			calendarAt(c, ny, 2026, day.m, day.d, 23, 59, 59, 999)
			expect("last millisecond", 1, false, 0)
			expect("check", 0, false, 0)
			if b.db != nil {
				row, ok, err := b.db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "daily"))
				if err != nil || !ok || row.Int("lastRequest") != start.UnixMilli() || row.Int("count") != 2 {
					t.Fatalf("row %v (found %v, %v), want count 2 and lastRequest %d", row, ok, err, start.UnixMilli())
				}
			}
			c.Clock.Set(end)
			got, err := l.Consume(ctx, "daily", rule)
			next := time.Date(2026, day.m, day.d+2, 0, 0, 0, 0, ny)
			if err != nil || !got.Allowed || got.Remaining != 1 || !got.Reset.Equal(next) {
				t.Fatalf("at the next midnight: %+v, %v; want admitted, 1 left, reset %v", got, err, next)
			}
		}
	})
}

// TestCalendarBoundaryRace: a full day's quota, then 64 requests at once
// on two limiters sharing the storage, one reading the day's last
// millisecond and one the next day's first, on every storage: the old day
// admits none, the new day exactly Max; the naive calendar window (24
// hours from the first request, RollingCalendar) admits none and is
// caught. With write combining on database storage, the same.
func TestCalendarBoundaryRace(t *testing.T) {
	berlin := testclock.Zone(t, "Europe/Berlin")
	rule := ratelimit.Rule{Max: 10, Calendar: ratelimit.Day, Location: berlin}
	// 25 October 2026 lasts 25 hours in Berlin.
	first := time.Date(2026, 10, 25, 9, 0, 0, 0, berlin)
	end := time.Date(2026, 10, 26, 0, 0, 0, 0, berlin)
	run := func(t *testing.T, b backend, key string, wrap func(ratelimit.Storage) ratelimit.Storage, opts ...ratelimit.Option) int64 {
		late, early := testclock.New(end), testclock.New(end.Add(-time.Millisecond))
		c := newClock()
		s := wrap(b.storage(c))
		s2 := s
		if b.db != nil { // another process: a storage of its own on the table
			s2 = wrap(b.storage(c))
		}
		lo := newLimiter(t, s, append(opts, ratelimit.WithClock(early.Now))...)
		ln := newLimiter(t, s2, append(opts, ratelimit.WithClock(late.Now))...)
		early.Set(first)
		c.Clock.Set(first)
		if n := burst(t, lo, key, rule, 16, 1); n != rule.Max {
			t.Fatalf("the first burst admitted %d, want %d", n, rule.Max)
		}
		early.Set(end.Add(-time.Millisecond))
		c.Clock.Set(end)
		var admitted, old atomic.Int64
		testrace.Release(64, func(i int) {
			l := []*ratelimit.Limiter{lo, ln}[i%2]
			d, err := l.Consume(context.Background(), key, rule)
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				admitted.Add(1)
				if i%2 == 0 || d.Reset.Equal(end) {
					old.Add(1)
				}
			}
		})
		if old.Load() != 0 {
			t.Errorf("%d admitted on the clock reading the full day", old.Load())
		}
		return admitted.Load()
	}
	eachBackend(t, func(t *testing.T, b backend, _ *clock) {
		same := func(s ratelimit.Storage) ratelimit.Storage { return s }
		if n := run(t, b, "exact", same); n != rule.Max {
			t.Fatalf("across the boundary: admitted %d, want exactly %d", n, rule.Max)
		}
		if n := run(t, b, "rolling", ratelimit.RollingCalendar); n == rule.Max {
			t.Fatalf("the rolling calendar window admitted %d too: the test cannot tell it apart", n)
		}
		if b.db != nil {
			if n := run(t, b, "combined", same, ratelimit.WithWriteCombining()); n != rule.Max {
				t.Fatalf("across the boundary with write combining: admitted %d, want exactly %d", n, rule.Max)
			}
		}
	})
}

// TestCalendarLateReadingIsDenied: a reading of a period's last
// millisecond that reaches the key's row or counter after a clock ahead
// opened the next period there is denied, with nothing left until its own
// period ends, rather than counted in the next period: there it would be
// admitted past its own period's Max. Alone, in a policy, through In and
// in a check; the next period's count is untouched by it.
func TestCalendarLateReadingIsDenied(t *testing.T) {
	berlin := testclock.Zone(t, "Europe/Berlin")
	end := time.Date(2026, 3, 30, 0, 0, 0, 0, berlin) // after the 23-hour day
	rule := ratelimit.Rule{Name: "day", Max: 2, Calendar: ratelimit.Day, Location: berlin}
	type decide func(l *ratelimit.Limiter) (ratelimit.Decision, error)
	ctx := context.Background()
	p := ratelimit.Policy{rule, {Name: "burst", Window: time.Minute, Max: 100}}
	alone := func(l *ratelimit.Limiter) (ratelimit.Decision, error) { return l.Consume(ctx, "late", rule) }
	policy := func(l *ratelimit.Limiter) (ratelimit.Decision, error) { return l.ConsumePolicy(ctx, "late", p, 1) }
	peeks := map[string]decide{
		"alone":  func(l *ratelimit.Limiter) (ratelimit.Decision, error) { return l.Check(ctx, "late", rule) },
		"policy": func(l *ratelimit.Limiter) (ratelimit.Decision, error) { return l.CheckPolicy(ctx, "late", p) },
	}
	check := func(t *testing.T, early, late *ratelimit.Limiter, consume, peek decide) {
		t.Helper()
		for i, c := range []struct {
			l    *ratelimit.Limiter
			want bool
		}{{early, true}, {early, true}, {late, true}, {early, false}, {late, true}, {late, false}} {
			d, err := consume(c.l)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if d.Allowed != c.want {
				t.Fatalf("request %d (on the %s clock): %+v, want allowed %v", i, map[bool]string{true: "early", false: "late"}[c.l == early], d, c.want)
			}
			if c.l == early && !c.want && (d.Remaining != 0 || !d.Reset.Equal(end)) {
				t.Errorf("the late reading's denial: remaining %d, reset %v; want 0 and its own day's end %v", d.Remaining, d.Reset, end)
			}
		}
		if d, err := peek(early); err != nil || d.Allowed || d.Remaining != 0 {
			t.Errorf("a check on the early clock: %+v, %v; want denied, nothing remaining", d, err)
		}
	}
	limiters := func(t *testing.T, s ratelimit.Storage) (early, late *ratelimit.Limiter) {
		return newLimiter(t, s, ratelimit.WithClock(func() time.Time { return end.Add(-time.Millisecond) })),
			newLimiter(t, s, ratelimit.WithClock(func() time.Time { return end }))
	}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		c.Clock.Set(end)
		for name, consume := range map[string]decide{"alone": alone, "policy": policy} {
			t.Run(name, func(t *testing.T) {
				early, late := limiters(t, b.storage(c))
				check(t, early, late, consume, peeks[name])
			})
		}
	})
	for name, db := range txDBs(t) {
		t.Run("in/"+name, func(t *testing.T) {
			early, late := limiters(t, ratelimit.Database(db))
			in := func(consume decide) decide {
				return func(l *ratelimit.Limiter) (d ratelimit.Decision, err error) {
					inTx(t, db, true, func(_ context.Context, tx *core.DB) { d, err = consume(l.In(tx)) })
					return d, err
				}
			}
			check(t, early, late, in(alone), peeks["alone"])
		})
	}
}

// TestCalendarRulesRefused: what a calendar rule cannot be, and the modes
// that cannot serve it, are refused with core.ErrInvalid before any I/O.
func TestCalendarRulesRefused(t *testing.T) {
	ctx := context.Background()
	l := newLimiter(t, ratelimit.Memory(10))
	for _, r := range []ratelimit.Rule{
		{Max: 5, Calendar: ratelimit.Day, Window: time.Hour},
		{Max: -1, Calendar: ratelimit.Month},
		{Max: 5, Calendar: 9},
	} {
		if _, err := l.Consume(ctx, "k", r); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%+v: %v, want core.ErrInvalid", r, err)
		}
		if err := r.Validate(); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Validate(%+v): %v, want core.ErrInvalid", r, err)
		}
	}
	day := ratelimit.Rule{Max: 5, Calendar: ratelimit.Day}
	for _, m := range []ratelimit.Mode{ratelimit.BetterAuthWindow, ratelimit.SlidingWindow, ratelimit.GCRA} {
		lm := newLimiter(t, ratelimit.Memory(10), ratelimit.WithMode(m))
		if _, err := lm.Consume(ctx, "k", day); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), m.String()) {
			t.Errorf("%v: %v, want core.ErrInvalid naming the mode", m, err)
		}
		if err := lm.CheckRule(day); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("CheckRule under %v: %v, want core.ErrInvalid", m, err)
		}
	}
	// A month lasts up to 31 days and an hour: a shorter declared longest
	// window is refused, so Prune never deletes a live month.
	short := newLimiter(t, ratelimit.Memory(10), ratelimit.WithLongestWindow(31*24*time.Hour))
	if err := short.CheckRule(ratelimit.Rule{Max: 1, Calendar: ratelimit.Month}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("a month under a 31-day longest window: %v, want core.ErrInvalid", err)
	}
	long := newLimiter(t, ratelimit.Memory(10), ratelimit.WithLongestWindow(ratelimit.Month.Longest()))
	if err := long.CheckRule(ratelimit.Rule{Max: 1, Calendar: ratelimit.Month}); err != nil {
		t.Errorf("a month under Month.Longest(): %v", err)
	}
}

// TestCalendarPrune: with the longest window a month's bound, Prune
// deletes a finished month's row once the bound has passed since its
// start, never the live month's.
func TestCalendarPrune(t *testing.T) {
	for _, b := range backends(t)[:1] {
		c := newClock()
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithLongestWindow(ratelimit.Month.Longest()))
		rule := ratelimit.Rule{Max: 3, Calendar: ratelimit.Month}
		ctx := context.Background()
		c.Clock.Set(time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC))
		if _, err := l.Consume(ctx, "jan", rule); err != nil {
			t.Fatal(err)
		}
		c.Clock.Set(time.Date(2026, 2, 1, 0, 30, 0, 0, time.UTC))
		if _, err := l.Consume(ctx, "feb", rule); err != nil {
			t.Fatal(err)
		}
		c.Clock.Set(time.Date(2026, 2, 1, 1, 0, 0, 0, time.UTC)) // 31 days and an hour after 1 January
		if n, err := l.Prune(ctx); err != nil || n != 1 {
			t.Fatalf("Prune: %d, %v; want January's row alone", n, err)
		}
		if _, ok, err := b.db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "feb")); err != nil || !ok {
			t.Fatalf("February's row: found %v, %v", ok, err)
		}
	}
}

// TestParseCalendarRule: calendar rules read and written as text, and an
// unknown time zone refused with core.ErrInvalid naming it.
func TestParseCalendarRule(t *testing.T) {
	berlin := testclock.Zone(t, "Europe/Berlin")
	for in, want := range map[string]ratelimit.Rule{
		"1000/day":                   {Max: 1000, Calendar: ratelimit.Day},
		"5/week@Europe/Berlin":       {Max: 5, Calendar: ratelimit.Week, Location: berlin},
		" 7 / Month @ Europe/Berlin": {Max: 7, Calendar: ratelimit.Month, Location: berlin},
		"0/year":                     {Max: 0, Calendar: ratelimit.Year},
	} {
		got, err := ratelimit.ParseRule(in)
		if err != nil || got.Max != want.Max || got.Calendar != want.Calendar || got.Location.String() != want.Location.String() || got.Window != 0 {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", in, got, err, want)
			continue
		}
		back, err := ratelimit.ParseRule(got.String())
		if err != nil || back.String() != got.String() {
			t.Errorf("%q: String %q reads back as %+v, %v", in, got.String(), back, err)
		}
	}
	for _, in := range []string{"10/day@Mars/Olympus_Mons", "10/day@", "10/fortnight@UTC", "10-day"} {
		_, err := ratelimit.ParseRule(in)
		if !errors.Is(err, core.ErrInvalid) {
			t.Errorf("ParseRule(%q): %v, want core.ErrInvalid", in, err)
		}
	}
	if _, err := ratelimit.ParseRule("10/day@Mars/Olympus_Mons"); err == nil || !strings.Contains(err.Error(), "Mars/Olympus_Mons") {
		t.Errorf("an unknown zone's error does not name it: %v", err)
	}
}

// TestCalendarMonthAfterFebruary: a month's window ends at the next
// month's start, not a month's length later: after February (28 days) a
// request on 1 March opens March's window, which lasts 31 days; a storage
// that judged February's row by March's length would still deny.
func TestCalendarMonthAfterFebruary(t *testing.T) {
	rule := ratelimit.Rule{Max: 1, Calendar: ratelimit.Month}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now))
		utc := func(m time.Month, d, h, min, s, ms int) time.Time {
			return time.Date(2026, m, d, h, min, s, ms*1e6, time.UTC)
		}
		calendarSteps(t, c, []calendarStep{
			{utc(2, 1, 0, 0, 0, 0), true, utc(3, 1, 0, 0, 0, 0)},
			{utc(2, 28, 23, 59, 59, 999), false, utc(3, 1, 0, 0, 0, 0)},
			{utc(3, 1, 1, 0, 0, 0), true, utc(4, 1, 0, 0, 0, 0)},
			{utc(3, 31, 23, 0, 0, 0), false, utc(4, 1, 0, 0, 0, 0)},
			{utc(4, 1, 0, 0, 0, 0), true, utc(5, 1, 0, 0, 0, 0)},
		}, func(ctx context.Context) (ratelimit.Decision, error) { return l.Consume(ctx, "monthly", rule) })
	})
}

// calendarStep is one decision of a scripted sequence: when, and what it
// must answer.
type calendarStep struct {
	at      time.Time
	allowed bool
	reset   time.Time
}

// calendarSteps moves c to each step's instant and checks what decide
// answers there.
func calendarSteps(t *testing.T, c *clock, steps []calendarStep, decide func(context.Context) (ratelimit.Decision, error)) {
	t.Helper()
	for i, s := range steps {
		c.Clock.Set(s.at)
		d, err := decide(context.Background())
		if err != nil || d.Allowed != s.allowed || !d.Reset.Equal(s.reset) {
			t.Fatalf("step %d at %v: %+v, %v; want allowed %v, reset %v", i, s.at, d, err, s.allowed, s.reset)
		}
	}
}

// TestCalendarInPolicy: a daily calendar rule beside a per-minute rule in
// one policy, on every storage: the day binds once it is full, its Reset
// the next local midnight, and a new day admits again; a calendar rule of
// Max 0 reports the period's end too.
func TestCalendarInPolicy(t *testing.T) {
	ny := testclock.Zone(t, "America/New_York")
	p := ratelimit.Policy{{Name: "burst", Window: time.Minute, Max: 2}, {Name: "daily", Max: 3, Calendar: ratelimit.Day, Location: ny}}
	midnight := time.Date(2026, 11, 2, 0, 0, 0, 0, ny)
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now))
		ctx := context.Background()
		calendarSteps(t, c, []calendarStep{
			{midnight.Add(-3 * time.Minute), true, midnight.Add(-2 * time.Minute)},
			{midnight.Add(-2 * time.Minute), true, midnight.Add(-time.Minute)},
			{midnight.Add(-time.Minute), true, midnight},
			{midnight.Add(-time.Second), false, midnight}, // the day is full
			{midnight, true, midnight.Add(time.Minute)},
		}, func(ctx context.Context) (ratelimit.Decision, error) { return l.ConsumePolicy(ctx, "p", p, 1) })
		zero := ratelimit.Policy{{Name: "burst", Window: time.Minute, Max: 2}, {Name: "never", Calendar: ratelimit.Month, Location: ny}}
		d, err := l.ConsumePolicy(ctx, "z", zero, 1)
		if next := time.Date(2026, 12, 1, 0, 0, 0, 0, ny); err != nil || d.Allowed || !d.Reset.Equal(next) {
			t.Fatalf("a Max 0 month: %+v, %v; want denied until %v", d, err, next)
		}
	})
}

// BenchmarkCalendarMemory: an admitted decision on Memory under a daily
// calendar rule in Berlin beside the same under a rolling 24-hour rule:
// the cost of computing the period.
func BenchmarkCalendarMemory(b *testing.B) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		b.Skip(err)
	}
	for _, r := range []struct {
		name string
		rule ratelimit.Rule
	}{
		{"rolling", ratelimit.Rule{Window: 24 * time.Hour, Max: 1 << 62}},
		{"calendar", ratelimit.Rule{Calendar: ratelimit.Day, Location: berlin, Max: 1 << 62}},
	} {
		b.Run(r.name, func(b *testing.B) {
			c := testclock.New(time.Date(2026, 10, 25, 12, 0, 0, 0, berlin))
			l, err := ratelimit.New(ratelimit.Memory(16), ratelimit.WithClock(c.Now))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for b.Loop() {
				if d, err := l.Consume(ctx, "k", r.rule); err != nil || !d.Allowed {
					b.Fatal(d, err)
				}
			}
		})
	}
}

// TestCalendarResetRule: ResetRule clears a full calendar key on every
// storage (on Secondary, the period's own counter), and it is admitted
// again in the same period.
func TestCalendarResetRule(t *testing.T) {
	rule := ratelimit.Rule{Max: 1, Calendar: ratelimit.Week}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now))
		ctx := context.Background()
		c.Clock.Set(time.Date(2026, 12, 6, 23, 0, 0, 0, time.UTC)) // a Sunday: the week ends in an hour
		monday := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
		calendarSteps(t, c, []calendarStep{
			{c.Now(), true, monday},
			{c.Now(), false, monday},
		}, func(ctx context.Context) (ratelimit.Decision, error) { return l.Consume(ctx, "weekly", rule) })
		if err := l.ResetRule(ctx, "weekly", rule); err != nil {
			t.Fatal(err)
		}
		if d, err := l.Consume(ctx, "weekly", rule); err != nil || !d.Allowed {
			t.Fatalf("after ResetRule: %+v, %v; want admitted", d, err)
		}
	})
}

// TestCalendarInTransaction: a calendar charge made through In commits
// and rolls back with the caller's transaction, and the period's row is
// the day's start.
func TestCalendarInTransaction(t *testing.T) {
	rule := ratelimit.Rule{Max: 4, Calendar: ratelimit.Day, Location: testclock.Zone(t, "America/New_York")}
	for name, db := range txDBs(t) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			c.Clock.Set(time.Date(2026, 3, 8, 20, 0, 0, 0, rule.Location))
			l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now))
			inTx(t, db, true, func(ctx context.Context, tx *core.DB) { mustDecide(t, l.In(tx), ctx, "tx", rule, 2) })
			inTx(t, db, false, func(ctx context.Context, tx *core.DB) {
				if d := mustDecide(t, l.In(tx), ctx, "tx", rule, 2); !d.Allowed || d.Remaining != 0 {
					t.Errorf("in the rolled-back transaction: %+v, want admitted with 0 remaining", d)
				}
			})
			row, ok, err := db.FindOne(context.Background(), core.ModelRateLimit, core.Eq("key", "tx"))
			start := time.Date(2026, 3, 8, 0, 0, 0, 0, rule.Location)
			if err != nil || !ok || row.Int("count") != 2 || row.Int("lastRequest") != start.UnixMilli() {
				t.Fatalf("row %v (found %v, %v): want the committed 2 at the day's start %d", row, ok, err, start.UnixMilli())
			}
		})
	}
}
