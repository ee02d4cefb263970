package sqltest_test

import (
	"context"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The engine counts every statement it sends under driver.WithRoundTrips:
// an IncrementOne is one statement where UPDATE … RETURNING exists and
// two on MySQL (read, then the write guarded on the row as read); a
// transaction adds its BEGIN and COMMIT.
func TestEngineCountsRoundTrips(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		if _, err := e.db.Create(e.ctx, core.ModelRateLimit, map[string]any{"key": "k", "count": 0, "lastRequest": 1}); err != nil {
			t.Fatal(err)
		}
		ctx, trips := driver.WithRoundTrips(e.ctx)
		if _, ok, err := e.db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
			Where: []core.Where{core.Eq("key", "k")}, Increment: map[string]int64{"count": 1}}); err != nil || !ok {
			t.Fatalf("IncrementOne: %v %v", ok, err)
		}
		want := int64(1)
		if e.b.dialect == sluicesql.MySQL {
			want = 2
		}
		if got := trips.Count(); got != want {
			t.Errorf("IncrementOne: %d round trips, want %d", got, want)
		}
		ctx, trips = driver.WithRoundTrips(e.ctx)
		if err := e.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
			_, _, err := tx.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "k"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got := trips.Count(); got != 3 {
			t.Errorf("a transaction with one read: %d round trips, want 3 (BEGIN, SELECT, COMMIT)", got)
		}
	})
}

// A limiter's observer gets each decision's round trips: one for an
// allowed decision in steady state on every database (a remembered window
// start on MySQL), none for a denial the denial cache answers.
func TestLimiterReportsRoundTrips(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		var trips []int64
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		l, err := ratelimit.New(ratelimit.Database(e.db), ratelimit.WithClock(func() time.Time { return now }),
			ratelimit.WithObserver(func(_ context.Context, ev ratelimit.Event) { trips = append(trips, ev.RoundTrips) }))
		if err != nil {
			t.Fatal(err)
		}
		rule := ratelimit.Rule{Window: time.Minute, Max: 3}
		for range 5 {
			if _, err := l.Consume(e.ctx, "k", rule); err != nil {
				t.Fatal(err)
			}
		}
		// Decisions 2 and 3 are allowed in steady state; 5 is a cached denial.
		if len(trips) != 5 || trips[1] != 1 || trips[2] != 1 || trips[4] != 0 || trips[0] < 1 || trips[3] < 1 {
			t.Errorf("round trips per decision %v, want [≥1 1 1 ≥1 0]", trips)
		}
	})
}
