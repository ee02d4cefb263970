package sqltest_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// A limiter that has never seen a key (a new process) decides on the row
// another opened in one statement on every database, MySQL included
// (core.DB.IncrementPair), and reports the count and the window's end of
// that row, not of a window of its own.
func TestColdKeyIsOneRoundTrip(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		opened := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		now := opened
		clock := func() time.Time { return now }
		var trips []int64
		newLimiter := func() *ratelimit.Limiter {
			l, err := ratelimit.New(ratelimit.Database(e.db), ratelimit.WithClock(clock),
				ratelimit.WithObserver(func(_ context.Context, ev ratelimit.Event) { trips = append(trips, ev.RoundTrips) }))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.CheckSchema(e.ctx); err != nil { // once per process, not per key
				t.Fatal(err)
			}
			return l
		}
		rule := ratelimit.Rule{Window: time.Minute, Max: 5}
		if _, err := newLimiter().Consume(e.ctx, "k", rule); err != nil {
			t.Fatal(err)
		}
		for i := int64(2); i <= 4; i++ {
			now = opened.Add(time.Duration(i) * 7 * time.Second)
			trips = trips[:0]
			d, err := newLimiter().Consume(e.ctx, "k", rule)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Allowed || d.Remaining != rule.Max-i || !d.Reset.Equal(opened.Add(rule.Window)) {
				t.Errorf("decision %d of a cold limiter: allowed %v, remaining %d, reset %v; want true, %d, %v",
					i, d.Allowed, d.Remaining, d.Reset, rule.Max-i, opened.Add(rule.Window))
			}
			if len(trips) != 1 || trips[0] != 1 {
				t.Errorf("decision %d of a cold limiter: round trips %v, want [1]", i, trips)
			}
		}
	})
}

// IncrementPair answers both values exactly at the edges of what packs
// into one integer on MySQL (and beyond them, where it is IncrementOne),
// with a negative other value, on every database.
func TestIncrementPairAtItsEdges(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		for i, c := range []struct{ count, last, max, lo, hi int64 }{
			{0, -5, 1, -5, -5},                                      // a span of one
			{41, -1_000, 1 << 40, -1_000_000, 1_000_000},            // a negative start
			{1<<62 - 2, 1, 1<<62 - 1, 0, 1},                         // (value, other) packs exactly into MaxInt64: (2^62 − 1)·2 + 1
			{1<<62 - 2, 1, 1 << 62, 0, 1},                           // one more does not: IncrementOne
			{7, math.MaxInt64 - 1, 9, math.MinInt64, math.MaxInt64}, // the widest range
		} {
			key := fmt.Sprintf("edge-%d", i)
			if _, err := e.db.Create(e.ctx, core.ModelRateLimit, map[string]any{"key": key, "count": c.count, "lastRequest": c.last}); err != nil {
				t.Fatal(err)
			}
			v, o, ok, err := e.db.IncrementPair(e.ctx, core.PairRequest{Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", key)},
				Field: "count", By: 1, Max: c.max, Other: "lastRequest", OtherMin: c.lo, OtherMax: c.hi})
			if err != nil || !ok || v != c.count+1 || o != c.last {
				t.Errorf("case %d: IncrementPair = %d, %d, ok %v, %v; want %d, %d, true", i, v, o, ok, err, c.count+1, c.last)
			}
			row, _, err := e.db.FindOne(e.ctx, core.ModelRateLimit, core.Eq("key", key))
			if err != nil || row.Int("count") != c.count+1 || row.Int("lastRequest") != c.last {
				t.Errorf("case %d: stored %v (%v), want count %d and lastRequest %d", i, row, err, c.count+1, c.last)
			}
		}
	})
}
