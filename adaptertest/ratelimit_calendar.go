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
	"admit none in the full day and exactly max in the next, whose window starts at that midnight (the row's lastRequest, the counter's name)"

// rlCalendar races the calendar day's two bursts over pools DBs.
func rlCalendar(pools int) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error {
		dbs, err := f.DBs(pools)
		if err != nil {
			return err
		}
		store := func(i int) ratelimit.Storage { return ratelimit.Database(dbs[i%len(dbs)]) }
		key := "calendar"
		if err := calendarBursts(ctx, store, key); err != nil {
			return err
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
	if err := calendarBursts(ctx, store, key); err != nil {
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
func calendarBursts(ctx context.Context, store func(i int) ratelimit.Storage, key string) error {
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
	burst := func(pick func(i int) *ratelimit.Limiter) (admitted, old int64, err error) {
		var n, o atomic.Int64
		var once sync.Once
		Release(rlBurst, func(i int) {
			d, e := pick(i).Consume(ctx, key, rule)
			if e != nil {
				once.Do(func() { err = e })
				return
			}
			if d.Allowed {
				n.Add(1)
				if !d.Reset.After(end) {
					o.Add(1)
				}
			}
		})
		return n.Load(), o.Load(), err
	}
	n, _, err := burst(func(i int) *ratelimit.Limiter { return ls[(i%rlPools)*2] })
	switch {
	case err != nil:
		return fmt.Errorf("the first burst: %w", err)
	case n != rlMax:
		return fmt.Errorf("the first burst admitted %d, want exactly %d", n, rlMax)
	}
	early.Set(end.Add(-time.Millisecond))
	n, old, err := burst(func(i int) *ratelimit.Limiter { return ls[i%len(ls)] })
	switch {
	case err != nil:
		return fmt.Errorf("the burst across midnight: %w", err)
	case old != 0:
		return fmt.Errorf("the burst across midnight admitted %d in the full day", old)
	case n != rlMax:
		return fmt.Errorf("the burst across midnight admitted %d, want exactly %d in the new day", n, rlMax)
	}
	return nil
}
