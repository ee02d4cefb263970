package adaptertest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// ruleCalendar is what the calendar-window bursts check.
const ruleCalendar = "under a daily calendar rule in Europe/Berlin (max 10) on its 25-hour day (2026-10-25), 64 concurrent requests admit exactly max; " +
	"then 64 more at once, half from limiters reading the day's last millisecond and half from limiters reading the next local midnight, " +
	"admit none on the early clocks, counted in neither day (a reading of the full day is denied even once the next day's window is open), " +
	"and exactly max on the late ones, in the next day, whose window starts at that midnight (the row's lastRequest, the counter's name); " +
	"one request at a time on a fresh key, a reading of the full day after the next day's first request is denied"

// ruleCalendarPolicy is what the calendar bursts check in a policy.
const ruleCalendarPolicy = "the same two bursts on a policy of that daily rule and a per-minute rule (max 1000): " +
	"the daily rule's row holds exactly max in the next day, and no request on the early clocks is admitted"

// calendarDecide is how the bursts charge a limiter: one rule, or a policy
// holding it.
type calendarDecide func(ctx context.Context, l *ratelimit.Limiter, key string, rule ratelimit.Rule) (ratelimit.Decision, error)

func consumeRule(ctx context.Context, l *ratelimit.Limiter, key string, rule ratelimit.Rule) (ratelimit.Decision, error) {
	return l.Consume(ctx, key, rule)
}

// calendarPolicyRule is the name of the calendar rule in consumePolicy's policy.
const calendarPolicyRule = "day"

func consumePolicy(ctx context.Context, l *ratelimit.Limiter, key string, rule ratelimit.Rule) (ratelimit.Decision, error) {
	rule.Name = calendarPolicyRule
	return l.ConsumePolicy(ctx, key, ratelimit.Policy{rule, {Name: "minute", Window: time.Minute, Max: 1000}}, 1)
}

// rlCalendar races the calendar day's two bursts over pools DBs, each
// request decided by decide; in a policy, the calendar rule's row is the
// one checked.
func rlCalendar(pools int, decide calendarDecide, row string) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error {
		dbs, err := f.DBs(pools)
		if err != nil {
			return err
		}
		store := func(i int) ratelimit.Storage { return ratelimit.Database(dbs[i%len(dbs)]) }
		key := "calendar"
		if err := calendarBursts(ctx, store, key, decide); err != nil {
			return err
		}
		if row != "" {
			key = "{" + key + "}" + ratelimit.PolicySeparator + row
		}
		count, last, err := rlRow(ctx, f, key)
		if err != nil {
			return err
		}
		if _, end := calendarDay(); count != rlMax || last != end.UnixMilli() {
			return fmt.Errorf("the row holds count %d and lastRequest %d, want %d and the next day's start %d", count, last, rlMax, end.UnixMilli())
		}
		return nil
	})
}

// storageCalendar races the calendar day's two bursts on a secondary
// storage (a client each, or several).
func storageCalendar(ctx context.Context, f *storageFixture, clients []driver.SecondaryStorage, round int) error {
	key := "calendar:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":" + strconv.Itoa(round)
	store := func(i int) ratelimit.Storage { return ratelimit.Secondary(clients[i%len(clients)]) }
	if err := calendarBursts(ctx, store, key, consumeRule); err != nil {
		return err
	}
	_, end := calendarDay()
	name := ratelimit.SecondaryPrefix + key + ratelimit.SlidingSeparator + strconv.FormatInt(end.UnixMilli(), 10)
	v, ok, err := f.s.Get(ctx, name)
	if err != nil || !ok || v != strconv.Itoa(rlMax) {
		return fmt.Errorf("the next day's counter %q holds %q (found %v, %v), want %d", name, v, ok, err, rlMax)
	}
	return nil
}

// calendarDay returns the day the bursts run on: 2026-10-25 from 09:00
// in Berlin, where the clocks go back that night, and the next midnight.
func calendarDay() (first, end time.Time) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = time.FixedZone("CET", 3600) // no zone data: a plain day
	}
	return time.Date(2026, 10, 25, 9, 0, 0, 0, berlin), time.Date(2026, 10, 26, 0, 0, 0, 0, berlin)
}

// calendarBursts runs the two bursts on limiters over store(i), half
// reading the early clock and half the late one.
func calendarBursts(ctx context.Context, store func(i int) ratelimit.Storage, key string, decide calendarDecide) error {
	first, end := calendarDay()
	rule := ratelimit.Rule{Max: rlMax, Calendar: ratelimit.Day, Location: first.Location()}
	early, late := NewClock(first), NewClock(end)
	var ls []*ratelimit.Limiter
	for i := range rlPools * 2 {
		c := early
		if i%2 == 1 {
			c = late
		}
		l, err := ratelimit.New(store(i/2), ratelimit.WithClock(c.Now))
		if err != nil {
			return err
		}
		ls = append(ls, l)
	}
	// burst releases rlBurst requests, the i-th on ls[pick(i)], and
	// counts the admitted and those admitted on an early clock (an even
	// index) or reported in the early day.
	burst := func(pick func(i int) int) (admitted, old int64, err error) {
		var n, o atomic.Int64
		var once sync.Once
		Release(rlBurst, func(i int) {
			j := pick(i)
			d, e := decide(ctx, ls[j], key, rule)
			if e != nil {
				once.Do(func() { err = e })
				return
			}
			if d.Allowed {
				n.Add(1)
				if j%2 == 0 || !d.Reset.After(end) {
					o.Add(1)
				}
			}
		})
		return n.Load(), o.Load(), err
	}
	n, _, err := burst(func(i int) int { return (i % rlPools) * 2 })
	switch {
	case err != nil:
		return fmt.Errorf("the first burst: %w", err)
	case n != rlMax:
		return fmt.Errorf("the first burst admitted %d, want exactly %d", n, rlMax)
	}
	early.Set(end.Add(-time.Millisecond))
	n, old, err := burst(func(i int) int { return i % len(ls) })
	switch {
	case err != nil:
		return fmt.Errorf("the burst across midnight: %w", err)
	case old != 0:
		return fmt.Errorf("the burst across midnight admitted %d on clocks reading the full day", old)
	case n != rlMax:
		return fmt.Errorf("the burst across midnight admitted %d, want exactly %d in the new day", n, rlMax)
	}
	return lateReading(ctx, ls[0], ls[1], key+":late", rule, decide)
}

// lateReading checks, one request at a time, that a reading of a full
// day's last millisecond (on early) made after a reading of the next day
// (on late) is denied: the key's row then holds the next day, which must
// not count it.
func lateReading(ctx context.Context, early, late *ratelimit.Limiter, key string, rule ratelimit.Rule, decide calendarDecide) error {
	for i := range rlMax {
		if d, err := decide(ctx, early, key, rule); err != nil || !d.Allowed {
			return fmt.Errorf("request %d of the full day, one at a time: %+v, %v; want admitted", i, d, err)
		}
	}
	if d, err := decide(ctx, late, key, rule); err != nil || !d.Allowed {
		return fmt.Errorf("the next day's first request: %+v, %v; want admitted", d, err)
	}
	if d, err := decide(ctx, early, key, rule); err != nil || d.Allowed {
		return fmt.Errorf("a reading of the full day after the next day's first request: %+v, %v; want denied", d, err)
	}
	return nil
}
