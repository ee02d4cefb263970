package redistest_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// gcraT0 is the GCRA races' clock, fixed so the stored tat is known.
var gcraT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// gcraRace releases 64 goroutines over the servers, each with its own GCRA
// limiter on a clock at `at`, on key with 10 per minute (T = 6 s), and
// returns how many were admitted.
func gcraRace(t *testing.T, stores []*sluiceredis.Storage, wrap func(*sluiceredis.Storage) driver.SecondaryStorage, key string, at time.Duration) int64 {
	t.Helper()
	now := func() time.Time { return gcraT0.Add(at) }
	var limiters []*ratelimit.Limiter
	for _, s := range stores {
		l, err := ratelimit.New(ratelimit.Secondary(wrap(s)), ratelimit.WithMode(ratelimit.GCRA), ratelimit.WithClock(now))
		if err != nil {
			t.Fatal(err)
		}
		limiters = append(limiters, l)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 10}
	var admitted atomic.Int64
	adaptertest.Release(64, func(i int) {
		d, err := limiters[i%len(limiters)].Consume(context.Background(), key, rule)
		if err != nil {
			t.Error(err)
		}
		if d.Allowed {
			admitted.Add(1)
		}
	})
	return admitted.Load()
}

// TestGCRARace: GCRA on Redis admits exactly 10 of 64 concurrent requests
// from 4 servers on a fresh key, exactly 3 when three emission intervals
// have passed, and stores the tat.
func TestGCRARace(t *testing.T) {
	stores := servers(t, 4)
	ctx := context.Background()
	if got := gcraRace(t, stores, same, "g", 0); got != 10 {
		t.Fatalf("fresh key: admitted %d of 64 with max 10; want exactly 10", got)
	}
	if got := gcraRace(t, stores, same, "g", 18*time.Second); got != 3 {
		t.Fatalf("3 intervals later: admitted %d of 64; want exactly 3", got)
	}
	wantTAT := gcraT0.Add(78 * time.Second).UnixMilli() // 13 units of 6 s
	v, ok, err := stores[0].Get(ctx, ratelimit.SecondaryPrefix+"g")
	if err != nil || !ok || v != strconv.FormatInt(wantTAT, 10) {
		t.Fatalf("stored %q, %v, %v; want the tat %d", v, ok, err, wantTAT)
	}
}

// TestAdvanceTAT: the script's contract, one step at a time.
func TestAdvanceTAT(t *testing.T) {
	s, client, prefix := newStorage(t)
	ctx := context.Background()
	// A written key expires when the caller's clock reaches its tat.
	if _, _, err := s.AdvanceTAT(ctx, "ttl", 1000, 60000, 60000); err != nil {
		t.Fatal(err)
	}
	if ttl, err := client.PTTL(ctx, prefix+"ttl").Result(); err != nil || ttl <= 50*time.Second || ttl > 60*time.Second {
		t.Fatalf("PTTL %v, %v; want just under 60 s (tat 61000 − now 1000)", ttl, err)
	}
	// The times are the caller's, but Redis expires a written key after
	// tat − now of real time: steps are in units of 10 s, so that no key
	// expires between two steps however slowly the test runs.
	const u = 10_000
	for i, c := range []struct {
		now, inc, limit, tat int64
		ok                   bool
	}{
		{1000 * u, 0, 10 * u, 1000 * u, true},      // none: reads now, writes nothing
		{1000 * u, 6 * u, 10 * u, 1006 * u, true},  // advances from now
		{1000 * u, 6 * u, 10 * u, 1006 * u, false}, // 1012 − 1000 > 10: refused, unchanged
		{1001 * u, 0, 4 * u, 1006 * u, false},      // a check: 1006 − 1001 > 4
		{1002 * u, 6 * u, 10 * u, 1012 * u, true},  // fits exactly
		{5000 * u, 3 * u, 10 * u, 5003 * u, true},  // past the tat: from now
		{5000 * u, 0, 0, 5003 * u, false},          // nothing written by a check
		{5003 * u, 0, 0, 5003 * u, true},           // the tat reached: an empty bucket
	} {
		tat, ok, err := s.AdvanceTAT(ctx, "tat", c.now, c.inc, c.limit)
		if err != nil || tat != c.tat || ok != c.ok {
			t.Fatalf("step %d: AdvanceTAT(now %d, +%d, limit %d) = %d, %v, %v; want %d, %v", i, c.now, c.inc, c.limit, tat, ok, err, c.tat, c.ok)
		}
	}
	if _, _, err := s.AdvanceTAT(ctx, "tat", -1, 1, 1); err == nil {
		t.Fatal("a negative now was accepted")
	}
	if err := s.Set(ctx, "text", "abc", 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AdvanceTAT(ctx, "text", 1, 1, 1); err == nil {
		t.Fatal("a value that is not a time was advanced")
	}
}

// readThenWriteTAT is the deliberately non-atomic GCRA that the race must
// catch: GET, decide, SET.
type readThenWriteTAT struct {
	*sluiceredis.Storage
	b *barrier
}

func (r readThenWriteTAT) AdvanceTAT(ctx context.Context, key string, now, inc, limit int64) (int64, bool, error) {
	v, ok, err := r.Get(ctx, key)
	r.b.wait()
	if err != nil {
		return 0, false, err
	}
	tat := now
	if n, _ := strconv.ParseInt(v, 10, 64); ok && n > now {
		tat = n
	}
	if tat+inc-now > limit {
		return tat, false, nil
	}
	return tat + inc, true, r.Set(ctx, key, strconv.FormatInt(tat+inc, 10), 0)
}

// TestGCRARaceCatchesNonAtomic proves TestGCRARace can fail.
func TestGCRARaceCatchesNonAtomic(t *testing.T) {
	b := newBarrier(64)
	got := gcraRace(t, servers(t, 4), func(s *sluiceredis.Storage) driver.SecondaryStorage { return readThenWriteTAT{s, b} }, "g", 0)
	t.Logf("the read-then-write GCRA admitted %d of 64 with max 10", got)
	if got <= 10 {
		t.Fatalf("the read-then-write GCRA admitted %d of 64 with max 10; the race should have let more through", got)
	}
}
