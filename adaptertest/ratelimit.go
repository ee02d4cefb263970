package adaptertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// Race parameters of the rate-limit scenarios.
const (
	rlBurst = 64 // concurrent callers
	rlMax   = 10 // the rule's max
	rlPools = 4  // DBs for the several-pools cases
)

var rlRule = ratelimit.Rule{Window: time.Hour, Max: rlMax}

// The sentences of the contract the rate-limit cases check; the case's
// name gives the pools and the cost.
const (
	ruleFreshBurst = "64 concurrent requests of one cost on one fresh key with max 10, over one pool or several, " +
		"admit exactly max/cost of them, and the stored count is what was admitted"
	ruleWindowRoll = "when a full window has ended (elapsed: the window, or the window + 1.5 s), 64 concurrent requests " +
		"over one pool or several reset it once and admit exactly max in the new window"
	ruleHostileKeys = "a key built by ratelimit.SafeKey from hostile bytes (NUL, invalid UTF-8, control characters, 10 kB) is stored " +
		"and limited like any other: max admitted, then denied, never an error (which fail-open would turn into admission)"
	ruleDeletedRow = "a rate-limit row deleted after the limiter read it and before its guarded write is created again, with no error"
)

// rlLate is how long after its end the second window-roll burst comes.
const rlLate = 1500 * time.Millisecond

// rlFreshBurst races requests of cost on a fresh key over pools DBs.
func rlFreshBurst(mode ratelimit.Mode, pools int, cost int64) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error { return burstOnFreshKey(ctx, f, mode, pools, cost) })
}

// rlWindowRoll races requests on a full window that ended late ago.
func rlWindowRoll(mode ratelimit.Mode, pools int, late time.Duration) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error { return windowRollDuringBurst(ctx, f, mode, pools, late) })
}

// rlT0 is the scenarios' start: a fixed instant, so runs are repeatable.
const rlT0 = int64(1_767_225_600_000) // 2026-01-01T00:00:00Z

func rlLimiters(f *Fixture, clock *Clock, mode ratelimit.Mode, pools int, opts ...ratelimit.Option) ([]*ratelimit.Limiter, error) {
	dbs, err := f.DBs(pools)
	if err != nil {
		return nil, err
	}
	var out []*ratelimit.Limiter
	for _, db := range dbs {
		l, err := ratelimit.New(ratelimit.Database(db), append([]ratelimit.Option{ratelimit.WithClock(clock.Now), ratelimit.WithMode(mode)}, opts...)...)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// rlRelease sends rlBurst concurrent requests spread over the limiters and
// returns how many were admitted, failing on any error.
func rlRelease(ctx context.Context, ls []*ratelimit.Limiter, key string, cost int64) (int64, error) {
	var admitted atomic.Int64
	var errs sync.Map
	Release(rlBurst, func(i int) {
		d, err := ls[i%len(ls)].ConsumeN(ctx, key, rlRule, cost)
		if err != nil {
			errs.Store(i, err)
			return
		}
		if d.Allowed {
			admitted.Add(1)
		}
	})
	var first error
	n := 0
	errs.Range(func(_, v any) bool {
		n++
		if first == nil {
			first = v.(error)
		}
		return true
	})
	if first != nil {
		return admitted.Load(), fmt.Errorf("%d of %d requests failed, for example: %w", n, rlBurst, first)
	}
	return admitted.Load(), nil
}

// rlRow reads the stored counter.
func rlRow(ctx context.Context, f *Fixture, key string) (count, last int64, err error) {
	row, ok, err := f.DB.FindOne(ctx, core.ModelRateLimit, core.Eq("key", key))
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, fmt.Errorf("no rate-limit row for %q", key)
	}
	return row.Int("count"), row.Int("lastRequest"), nil
}

func burstOnFreshKey(ctx context.Context, f *Fixture, mode ratelimit.Mode, pools int, cost int64, opts ...ratelimit.Option) error {
	clock := NewClock(time.UnixMilli(rlT0))
	ls, err := rlLimiters(f, clock, mode, pools, opts...)
	if err != nil {
		return err
	}
	const key = "burst"
	admitted, err := rlRelease(ctx, ls, key, cost)
	if err != nil {
		return err
	}
	if want := rlMax / cost; admitted != want {
		return fmt.Errorf("admitted %d requests of cost %d, want exactly %d (max %d)", admitted, cost, want, rlMax)
	}
	count, _, err := rlRow(ctx, f, key)
	if err != nil {
		return err
	}
	if count != admitted*cost {
		return fmt.Errorf("stored count %d, want %d: the admitted requests times their cost", count, admitted*cost)
	}
	return nil
}

func windowRollDuringBurst(ctx context.Context, f *Fixture, mode ratelimit.Mode, pools int, late time.Duration) error {
	clock := NewClock(time.UnixMilli(rlT0))
	ls, err := rlLimiters(f, clock, mode, pools)
	if err != nil {
		return err
	}
	const key = "roll"
	// Fill the first window through every limiter, so that each has seen
	// the key denied (and cached the denial) before the window ends.
	for i := 0; i < rlMax+len(ls); i++ {
		d, err := ls[i%len(ls)].Consume(ctx, key, rlRule)
		if err != nil {
			return fmt.Errorf("filling the first window: %w", err)
		}
		if d.Allowed != (i < rlMax) {
			return fmt.Errorf("filling the first window: request %d allowed=%v, want %v", i+1, d.Allowed, i < rlMax)
		}
	}
	// One window later (late 0: the boundary instant, which opens a new window).
	next := rlT0 + (rlRule.Window + late).Milliseconds()
	clock.Set(time.UnixMilli(next))
	admitted, err := rlRelease(ctx, ls, key, 1)
	if err != nil {
		return err
	}
	if admitted != rlMax {
		return fmt.Errorf("admitted %d requests in the new window, want exactly %d: more means more than one caller reset the window", admitted, rlMax)
	}
	count, last, err := rlRow(ctx, f, key)
	if err != nil {
		return err
	}
	if count != rlMax || last != next {
		return fmt.Errorf("stored count %d and lastRequest %d, want %d and %d", count, last, rlMax, next)
	}
	return nil
}

func rlDeletedRow(ctx context.Context, f *Fixture) error {
	clock := NewClock(time.UnixMilli(rlT0))
	const key = "deleted"
	var armed atomic.Bool
	var deleteErr error
	hook := func(ctx context.Context, rec driver.Record) {
		if rec != nil && armed.CompareAndSwap(true, false) {
			_, deleteErr = f.DB.Delete(ctx, core.ModelRateLimit, core.Eq("key", key))
		}
	}
	db, err := core.New(hookRead(f.Adapter, hook), core.WithSchema(f.Schema))
	if err != nil {
		return err
	}
	l, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(clock.Now))
	if err != nil {
		return err
	}
	if _, err := l.Consume(ctx, key, rlRule); err != nil {
		return fmt.Errorf("first request: %w", err)
	}
	// The window is over, so the next request misses its in-window
	// increment and reads the row; the hook deletes it right after that
	// read, before the guarded reset.
	next := rlT0 + rlRule.Window.Milliseconds()
	clock.Set(time.UnixMilli(next))
	armed.Store(true)
	d, err := l.Consume(ctx, key, rlRule)
	if err != nil {
		return fmt.Errorf("request after the row was deleted: %w", err)
	}
	if deleteErr != nil {
		return fmt.Errorf("deleting the row: %w", deleteErr)
	}
	if armed.Load() {
		return fmt.Errorf("the limiter never read the row, so the deletion did not happen between read and write")
	}
	if !d.Allowed || d.Remaining != rlMax-1 {
		return fmt.Errorf("decision %+v, want allowed with %d remaining", d, rlMax-1)
	}
	count, last, err := rlRow(ctx, f, key)
	if err != nil {
		return err
	}
	if count != 1 || last != next {
		return fmt.Errorf("recreated row has count %d and lastRequest %d, want 1 and %d", count, last, next)
	}
	return nil
}

// hookRead wraps an adapter so that fn runs after each FindOne outside a
// transaction, keeping exactly the adapter's optional interfaces.
func hookRead(a driver.Adapter, fn func(context.Context, driver.Record)) driver.Adapter {
	h := readHook{Adapter: a, fn: fn}
	inc, isInc := a.(driver.Incrementer)
	tx, isTx := a.(driver.Transactor)
	// An adapter's IncrementReturning is kept, so that races run the
	// narrow write an API-key verification sends.
	ret, isRet := a.(returningIncrementer)
	switch {
	case isRet && isTx:
		return struct {
			readHook
			returningIncrementer
			driver.Transactor
		}{h, ret, tx}
	case isRet:
		return struct {
			readHook
			returningIncrementer
		}{h, ret}
	case isInc && isTx:
		return struct {
			readHook
			driver.Incrementer
			driver.Transactor
		}{h, inc, tx}
	case isInc:
		return struct {
			readHook
			driver.Incrementer
		}{h, inc}
	case isTx:
		return struct {
			readHook
			driver.Transactor
		}{h, tx}
	}
	return h
}

// returningIncrementer is an adapter's IncrementOne with its narrow form.
type returningIncrementer interface {
	driver.Incrementer
	driver.ReturningIncrementer
}

type readHook struct {
	driver.Adapter
	fn func(context.Context, driver.Record)
}

func (h readHook) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	rec, err := h.Adapter.FindOne(ctx, t, where)
	if err == nil && t.Model != core.ModelAPIKeyRefill { // an anchor is read after its key, which the hook holds
		h.fn(ctx, rec)
	}
	return rec, err
}

// FindMany hooks the reads of API keys' named limits, with a nil record.
func (h readHook) FindMany(ctx context.Context, t *driver.Table, where []driver.Where, o driver.FindOptions) ([]driver.Record, error) {
	recs, err := h.Adapter.FindMany(ctx, t, where, o)
	if err == nil && t.Model == core.ModelAPIKeyLimit {
		h.fn(ctx, nil)
	}
	return recs, err
}

func rlHostileKeys(ctx context.Context, f *Fixture) error {
	l, err := ratelimit.New(ratelimit.Database(f.DB))
	if err != nil {
		return err
	}
	rule := ratelimit.Rule{Window: time.Hour, Max: 3}
	for _, raw := range []string{"1.2.3.4|/\x00", "1.2.3.4|/\xff", "1.2.3.4|/\xc3(", "1.2.3.4|/\r\n%00#", "1.2.3.4|/" + strings.Repeat("\xfe", 10000)} {
		key := ratelimit.SafeKey(raw)
		for i := range 4 {
			d, err := l.Consume(ctx, key, rule)
			if err != nil {
				return fmt.Errorf("key from %q, request %d: %w", trim(raw), i+1, err)
			}
			if d.Allowed != (i < 3) {
				return fmt.Errorf("key from %q, request %d: allowed %v, want %v", trim(raw), i+1, d.Allowed, i < 3)
			}
		}
	}
	return nil
}

// trim shortens a long key for an error message.
func trim(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
