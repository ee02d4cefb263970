package keystore

import (
	"fmt"
	"time"
)

// Anchor is the schedule of a refill anchored to the calendar rather than
// to an interval: day Day of every month at TimeOfDay on the wall clock of
// Location, such as a customer's signup day. A month shorter than Day
// anchors on its last day (the 31st is February's 28th or 29th, April's
// 30th), and the next month on Day again. Instants come from [time.Date],
// so a day of 23 or 25 hours keeps the wall-clock time: a TimeOfDay that
// the clocks skip that day is read with the offset from before the
// change, and one they pass twice is the first.
//
// The arithmetic is here, in Go, for every store: SQL and storage
// scripts compare only the instants it yields (see [Anchor.Latest]).
type Anchor struct {
	Day       int           // 1 to 31
	TimeOfDay time.Duration // since local midnight: 0 ≤ TimeOfDay < 24h, whole milliseconds
	Location  *time.Location
}

// Problem says what makes a invalid, "" when it is valid: a Day outside 1
// to 31, a TimeOfDay outside [0, 24h) or not a whole number of
// milliseconds, or a nil Location.
func (a Anchor) Problem() string {
	switch {
	case a.Day < 1 || a.Day > 31:
		return fmt.Sprintf("refill day %d is not a day of the month (1 to 31; a month shorter than the day refills on its last day)", a.Day)
	case a.TimeOfDay < 0 || a.TimeOfDay >= 24*time.Hour:
		return fmt.Sprintf("refill time of day %v is outside 0 to 24h", a.TimeOfDay)
	case a.TimeOfDay%time.Millisecond != 0:
		return fmt.Sprintf("refill time of day %v is not a whole number of milliseconds", a.TimeOfDay)
	case a.Location == nil:
		return "refill location is nil (give time.UTC for UTC, or a *time.Location from time.LoadLocation)"
	}
	return ""
}

// in returns the anchor instant of month m of year y in a's location (m
// may be out of 1 to 12, as time.Date normalises it).
func (a Anchor) in(y int, m time.Month) time.Time {
	first := time.Date(y, m, 1, 0, 0, 0, 0, a.Location) // normalised year and month
	y, m = first.Year(), first.Month()
	last := time.Date(y, m+1, 0, 0, 0, 0, 0, a.Location).Day()
	tod := a.TimeOfDay
	h, mi := int(tod/time.Hour), int(tod%time.Hour/time.Minute)
	s, ns := int(tod%time.Minute/time.Second), int(tod%time.Second)
	at := time.Date(y, m, min(a.Day, last), h, mi, s, ns, a.Location)
	// time.Date does not promise which of a wall-clock time passed twice
	// it returns: take the first, the one under the earlier offset.
	_, off := at.Zone()
	if _, before := at.Add(-3 * time.Hour).Zone(); before > off {
		first := at.Add(-time.Duration(before-off) * time.Second)
		if fl, al := first.In(a.Location), at.In(a.Location); fl.Hour() == al.Hour() && fl.Minute() == al.Minute() && fl.Day() == al.Day() {
			return first
		}
	}
	return at
}

// Latest returns the latest anchor instant at or before t. a must be valid
// ([Anchor.Problem]).
func (a Anchor) Latest(t time.Time) time.Time {
	local := t.In(a.Location)
	y, m := local.Year(), local.Month()
	at := a.in(y, m)
	for at.After(t) { // at most twice: once, unless a skipped hour moves an anchor past a month's end
		m--
		at = a.in(y, m)
	}
	return at
}

// Next returns the first anchor instant after t. a must be valid.
func (a Anchor) Next(t time.Time) time.Time {
	local := t.In(a.Location)
	y, m := local.Year(), local.Month()
	at := a.in(y, m)
	for !at.After(t) {
		m++
		at = a.in(y, m)
	}
	return at
}

// Due reports whether an anchored refill is due at now for a key last
// refilled (or, never refilled, created) at last, both epoch
// milliseconds: when last is before the latest anchor at or before now.
// Not due, wait is the milliseconds until the next anchor. a must be
// valid.
func (a Anchor) Due(last, now int64) (due bool, wait int64) {
	t := time.UnixMilli(now)
	if last < a.Latest(t).UnixMilli() {
		return true, 0
	}
	return false, a.Next(t).UnixMilli() - now
}

// Interval returns the refill interval, in milliseconds, that makes the
// interval rule of [Apply] (due when last ≤ now − interval) say exactly
// what [Anchor.Due] says at now: now − latest anchor + 1. A store that
// guards its write on the interval rule, as apikey's database mode does,
// plans with it, and so still refills once of many concurrent claims.
// a must be valid.
func (a Anchor) Interval(now int64) int64 {
	return now - a.Latest(time.UnixMilli(now)).UnixMilli() + 1
}
