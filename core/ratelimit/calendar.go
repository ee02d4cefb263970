package ratelimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// This file is the calendar windows (see "Calendar windows" in the package
// documentation): a rule whose Calendar is set counts in the day, week,
// month or year holding the request, in the rule's Location, instead of
// in a window opened by a key's first request. The library computes a
// period's start and end itself, in epoch milliseconds, so every process
// and every storage agrees on them; the storages store the start as the
// window's start, as they store a fixed window's.

// Calendar names the calendar period a [Rule] counts in. The zero value
// means none: the rule counts in windows of its Window.
type Calendar uint8

const (
	// Day: from local midnight to the next local midnight (23, 24 or 25
	// hours across a daylight-saving change).
	Day Calendar = iota + 1
	// Week: from Monday's local midnight to the next Monday's (ISO 8601
	// weeks).
	Week
	// Month: from the first of the month's local midnight to the next
	// month's.
	Month
	// Year: from 1 January's local midnight to the next year's.
	Year
)

// calendarNames are the names ParseRule reads and String writes.
var calendarNames = [...]string{Day: "day", Week: "week", Month: "month", Year: "year"}

// String names the calendar as ParseRule reads it: "day", "week",
// "month" or "year"; "" for none.
func (c Calendar) String() string {
	if c == 0 {
		return ""
	}
	if int(c) < len(calendarNames) {
		return calendarNames[c]
	}
	return fmt.Sprintf("Calendar(%d)", uint8(c))
}

// calendarLongest bounds a period's length, which [WithLongestWindow] and
// Prune rely on: the nominal length and an hour of daylight-saving time.
var calendarLongest = [...]time.Duration{
	Day:   25 * time.Hour,
	Week:  7*24*time.Hour + time.Hour,
	Month: 31*24*time.Hour + time.Hour,
	Year:  366*24*time.Hour + time.Hour,
}

// Longest returns the longest a period of c lasts, the bound the limiter
// compares with [WithLongestWindow]: 25 hours for a Day, 7 days and an
// hour for a Week, 31 days and an hour for a Month, 366 days and an hour
// for a Year; 0 for none or an unknown calendar. It holds in every zone
// whose clocks go back by at most an hour at a time, as daylight-saving
// time does almost everywhere. In a zone that sets them back by more
// since 2000 (Antarctica/Troll, Asia/Magadan in 2014: two hours, a 26-hour day) a period lasts
// longer by the difference, and a limiter refuses such a rule unless its
// WithLongestWindow covers that.
func (c Calendar) Longest() time.Duration {
	if c == 0 || int(c) >= len(calendarLongest) {
		return 0
	}
	return calendarLongest[c]
}

// longestIn is the longest a period of c lasts in loc: [Calendar.Longest],
// and more in a zone that sets its clocks back by more than an hour at
// once (Antarctica/Troll's two hours make a 26-hour day), by what it
// does. A limiter compares it with [WithLongestWindow], which Prune
// relies on to keep every live period's row.
func (c Calendar) longestIn(loc *time.Location) time.Duration {
	d := c.Longest()
	if d == 0 || loc == nil || loc == time.UTC {
		return d
	}
	return d + max(backShift(loc)-time.Hour, 0)
}

// backShifts remember each location's backShift: a walk over its
// transitions, done once.
var backShifts sync.Map // *time.Location → time.Duration

// backShift is the largest step by which loc sets its clocks back, from
// 2000 to 2100: how much longer than nominal one of its periods can last
// (earlier shifts, such as St. John's double daylight time of 1988, are
// no instant a limiter decides at).
func backShift(loc *time.Location) time.Duration {
	if v, ok := backShifts.Load(loc); ok {
		return v.(time.Duration)
	}
	var most time.Duration
	t := time.Date(2000, 1, 1, 0, 0, 0, 0, loc)
	for i := 0; i < 1000 && t.Year() < 2100; i++ {
		_, end := t.ZoneBounds()
		if end.IsZero() || !end.After(t) {
			break
		}
		_, before := t.Zone()
		_, after := end.Zone()
		most = max(most, time.Duration(before-after)*time.Second)
		t = end
	}
	backShifts.Store(loc, most)
	return most
}

// location is the rule's time zone: UTC when none is set.
func (r Rule) location() *time.Location {
	if r.Location == nil {
		return time.UTC
	}
	return r.Location
}

// calendarProblem says what is wrong with a calendar rule, or "".
func (r Rule) calendarProblem() string {
	switch {
	case r.Calendar.Longest() == 0:
		return fmt.Sprintf("rule calendar %d is not Day, Week, Month or Year", uint8(r.Calendar))
	case r.Window != 0:
		return fmt.Sprintf("a calendar rule's window is its period (%v): leave Window 0, not %v", r.Calendar, r.Window)
	case r.Max < 0:
		return fmt.Sprintf("rule max %d must not be negative", r.Max)
	case r.Location == time.Local:
		// Each process's own zone (its TZ): processes in other zones would
		// reset the shared counter at their own midnights, and a day admit
		// up to twice its Max.
		return "a calendar rule's Location must not be time.Local, each machine's own zone (TZ): processes in other zones would count other days in one counter; " +
			"give time.UTC or a zone loaded by name, such as time.LoadLocation(\"Europe/Berlin\")"
	}
	return ""
}

// calendarModeProblem says why a mode cannot count in calendar periods, or
// "": only fixed windows can. A Better Auth window moves with each
// admission, GCRA spaces requests by Window/Max, and SlidingWindow weighs
// the previous window by the share of one length the last Window still
// covers, none of which a period of 23 to 25 hours or 28 to 31 days has.
func calendarModeProblem(m Mode) string {
	if m == FixedWindow {
		return ""
	}
	return fmt.Sprintf("a calendar rule counts in fixed periods; %v does not serve it (use FixedWindow)", m)
}

// Period returns the calendar period holding t in loc (nil: UTC): its
// start, the first instant of t's day, week, month or year there, and the
// next period's start. For none or an unknown calendar it returns t, t.
func (c Calendar) Period(t time.Time, loc *time.Location) (start, end time.Time) {
	if c.Longest() == 0 {
		return t, t
	}
	if loc == nil {
		loc = time.UTC
	}
	s, e := c.period(t.UnixMilli(), loc)
	return time.UnixMilli(s).In(loc), time.UnixMilli(e).In(loc)
}

// periodMemo is a period computed once: periods tile time, so an instant
// in [start, end) of a period of cal in loc is in that period.
type periodMemo struct {
	cal        Calendar
	loc        *time.Location
	start, end int64
}

// periodMemos remember the latest period computed per slot, a slot for
// each calendar and location (collisions only cost a computation): a
// decision then reads one atomic pointer instead of converting its instant
// to local time and back twice.
var periodMemos [16]atomic.Pointer[periodMemo]

// period returns the start and end (epoch ms) of the period of c holding
// now in loc: start ≤ now < end.
func (c Calendar) period(now int64, loc *time.Location) (start, end int64) {
	slot := &periodMemos[(uintptr(unsafe.Pointer(loc))>>4^uintptr(c))%uintptr(len(periodMemos))]
	if m := slot.Load(); m != nil && m.cal == c && m.loc == loc && m.start <= now && now < m.end {
		return m.start, m.end
	}
	start, end = c.compute(now, loc)
	slot.Store(&periodMemo{cal: c, loc: loc, start: start, end: end})
	return start, end
}

// compute is period without the memo.
func (c Calendar) compute(now int64, loc *time.Location) (start, end int64) {
	y, m, d := time.UnixMilli(now).In(loc).Date()
	var y2, m2, d2 int
	switch c {
	case Day:
		y2, m2, d2 = y, int(m), d+1
	case Week:
		wd := (int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()) + 6) % 7 // Monday 0
		d -= wd
		y2, m2, d2 = y, int(m), d+7
	case Month:
		d = 1
		y2, m2, d2 = y, int(m)+1, 1
	default: // Year
		m, d = time.January, 1
		y2, m2, d2 = y+1, 1, 1
	}
	return dayStart(y, int(m), d, loc), dayStart(y2, m2, d2, loc)
}

// dayStart returns the first instant (epoch ms) of the local date y-m-d
// (normalised, as time.Date normalises it) in loc. Where a transition
// skips local midnight (America/Sao_Paulo's daylight-saving starts, at
// 00:00) or the whole day (Pacific/Apia on 30 December 2011), time.Date
// places midnight in the day before; the day then begins at the
// transition, where that zone ends.
func dayStart(y, m, d int, loc *time.Location) int64 {
	c := time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc)
	ty, tm, td := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Date()
	cy, cm, cd := c.Date()
	if cy < ty || cy == ty && (cm < tm || cm == tm && cd < td) {
		if _, end := c.ZoneBounds(); !end.IsZero() {
			c = end
		}
	}
	return c.UnixMilli()
}
