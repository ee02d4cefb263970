package keystore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
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

// MarshalText is a's stored form, "day ms zone" (such as "31 34200000
// Europe/Berlin": TimeOfDay in milliseconds), as [Key.RefillAnchor] holds
// it. It fails for an invalid anchor and for a Location that another
// process could not load by its name with [time.LoadLocation]: time.Local
// (each machine's own) and zones made with [time.FixedZone].
func (a Anchor) MarshalText() ([]byte, error) {
	if p := a.Problem(); p != "" {
		return nil, errors.New(p)
	}
	name := a.Location.String()
	if loc, err := loadZone(name); err != nil || name == "Local" || !sameZone(loc, a.Location) {
		return nil, fmt.Errorf("refill location %q cannot be stored: give time.UTC or a zone from time.LoadLocation, such as Europe/Berlin (a stored anchor is read back by its zone's name, and Local is each machine's own)", name)
	}
	return fmt.Appendf(nil, "%d %d %s", a.Day, a.TimeOfDay.Milliseconds(), name), nil
}

// UnmarshalText reads the form MarshalText writes.
func (a *Anchor) UnmarshalText(b []byte) error {
	day, rest, ok1 := strings.Cut(string(b), " ")
	ms, name, ok2 := strings.Cut(rest, " ")
	d, err1 := strconv.Atoi(day)
	t, err2 := strconv.ParseInt(ms, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return fmt.Errorf("refill anchor %q is not \"day ms zone\"", b)
	}
	loc, err := loadZone(name)
	if err != nil {
		return fmt.Errorf("refill anchor %q: %w", b, err)
	}
	v := Anchor{Day: d, TimeOfDay: time.Duration(t) * time.Millisecond, Location: loc}
	if p := v.Problem(); p != "" {
		return errors.New(p)
	}
	*a = v
	return nil
}

// zones holds the locations loaded by name: time.LoadLocation reads the
// zone database at each call, and a verification reads its key's anchor.
var zones sync.Map // name → *time.Location

func loadZone(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}

// sameZone reports whether a and b agree on the offset at a sample of
// instants: a *time.Location given under a name must be the zone of that
// name, or the stored anchor would be read back as another.
func sameZone(a, b *time.Location) bool {
	for _, t := range []int64{0, 1_700_000_000, 1_720_000_000, 1_800_000_000, 1_815_000_000} {
		_, x := time.Unix(t, 0).In(a).Zone()
		_, y := time.Unix(t, 0).In(b).Zone()
		if x != y {
			return false
		}
	}
	return true
}
