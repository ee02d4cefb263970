package pgxtest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	sluicepgx "github.com/sluice-go/sluice/adapters/pgx"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/gen"
)

// BenchmarkIncrementOne compares the adapter's IncrementOne, called through
// core.DB, with the same guarded UPDATE … RETURNING written by hand in pgx,
// on the same pool in the same run: one hot key, and 10 000 keys picked
// uniformly, at 1 and 32 goroutines. Raw and sluice calls alternate within
// each b.N, so drift hits both alike.
//
// Metrics: sluice-ns/op and raw-ns/op (mean latency of one call), x-raw,
// sluice's throughput as a fraction of raw pgx's (1.0 = as fast), and
// x-raw-p50, the same on median latencies, robust to stalls of a loaded
// machine; ns/op covers one call of each kind. Run:
//
//	SLUICE_POSTGRES_DSN=... go test -run '^$' -bench IncrementOne ./adapters/pgx/pgxtest
func BenchmarkIncrementOne(b *testing.B) {
	for _, be := range benchDSNs() {
		b.Run(be.name, func(b *testing.B) {
			bb := newBenchDB(b, be.dsn(b))
			for _, keys := range []int{1, 10_000} {
				for _, workers := range []int{1, 32} {
					b.Run(fmt.Sprintf("keys=%d/goroutines=%d", keys, workers), func(b *testing.B) {
						bb.compare(b, keys, workers, bb.raw, bb.increment)
					})
				}
			}
		})
	}
}

// BenchmarkLimiter compares a whole ratelimit.Limiter.Consume on this
// adapter with the hand-written floor of what any database-backed limiter
// costs: one UPDATE … RETURNING guarded on the key, the window and the
// limit. The floor leaves last_request alone, as a fixed window does: were
// it to move it, as the IncrementOne comparison's statement does, every
// limiter decision after a floor call on the same key would find its
// window's start changed and take three round trips.
func BenchmarkLimiter(b *testing.B) {
	for _, be := range benchDSNs() {
		b.Run(be.name, func(b *testing.B) {
			bb := newBenchDB(b, be.dsn(b))
			limiter, err := ratelimit.New(ratelimit.Database(bb.db))
			if err != nil {
				b.Fatal(err)
			}
			rule := ratelimit.Rule{Window: time.Hour, Max: capacity}
			consume := func(ctx context.Context, key string, _ int64) (int64, error) {
				d, err := limiter.Consume(ctx, key, rule)
				if err == nil && !d.Allowed {
					err = fmt.Errorf("key %q refused", key)
				}
				return d.Remaining, err
			}
			for _, keys := range []int{1, 10_000} {
				for _, workers := range []int{1, 32} {
					b.Run(fmt.Sprintf("keys=%d/goroutines=%d", keys, workers), func(b *testing.B) {
						bb.compare(b, keys, workers, bb.floor, consume)
					})
				}
			}
		})
	}
}

// benchDSNs are PostgreSQL as configured, and with synchronous_commit off
// for the session: commits no longer wait for the disk, so the client's own
// cost, which is what sluice adds, weighs most.
func benchDSNs() []benchDSN {
	return []benchDSN{
		{"postgres", adaptertest.PostgresDSN},
		{"postgres-nosync", func(t testing.TB) string {
			dsn := adaptertest.PostgresDSN(t)
			sep := "?"
			if strings.Contains(dsn, "?") {
				sep = "&"
			}
			return dsn + sep + "options=-c%20synchronous_commit%3Doff"
		}},
	}
}

type benchDSN struct {
	name string
	dsn  func(testing.TB) string
}

// benchDB is a rate-limit table with 10 000 keys, a sluice DB on it and the
// hand-written statement, sharing one pool.
type benchDB struct {
	pool *pgxpool.Pool
	db   *core.DB
	keys []string
	raw  func(ctx context.Context, key string, now int64) (int64, error)
	// floor is the rate limiter's hand-written equivalent.
	floor func(ctx context.Context, key string, now int64) (int64, error)
}

func newBenchDB(b *testing.B, dsn string) *benchDB {
	ctx := context.Background()
	pool, err := openPool(ctx, dsn, 32) // one connection per goroutine
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	tag := randTag()
	s := core.MustSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: fmt.Sprintf("bench_rl_%d", tag),
		core.ModelAPIKey: fmt.Sprintf("bench_ak_%d", tag), core.ModelRerolledKey: fmt.Sprintf("bench_rk_%d", tag),
		core.ModelAPIKeyLimit: fmt.Sprintf("bench_kl_%d", tag), core.ModelAPIKeyRefill: fmt.Sprintf("bench_kr_%d", tag)}})
	t, _ := s.Table(core.ModelRateLimit)
	stmts, err := gen.DDL(s, gen.Postgres)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, q := range gen.DropDDL(s, gen.Postgres) {
			_, _ = pool.Exec(ctx, q)
		}
	})
	for _, q := range stmts {
		if _, err := pool.Exec(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	bb := &benchDB{pool: pool}
	bb.db, err = sluicepgx.Open(ctx, pool, core.WithSchema(s))
	if err != nil {
		b.Fatal(err)
	}
	q := gen.Postgres.Quote
	for i := range 10_000 {
		bb.keys = append(bb.keys, fmt.Sprintf("key-%05d", i))
	}
	// last_request is now, so that the limiter's window (an hour) is open
	// for every key: both sides then measure the steady path, one guarded
	// UPDATE, not a window's first request.
	ins := fmt.Sprintf("INSERT INTO %s (%s, %s, %s) SELECT k, 0, $2 FROM unnest($1::text[]) AS k", q(t.Name), q("key"), q("count"), q("last_request"))
	if _, err := pool.Exec(ctx, ins, bb.keys, time.Now().UnixMilli()); err != nil {
		b.Fatal(err)
	}
	cols := strings.Join([]string{q("id"), q("key"), q("count"), q("last_request")}, ", ")
	upd := fmt.Sprintf("UPDATE %s SET %s = %s + $1, %s = $2 WHERE %s = $3 AND %s < $4 RETURNING %s",
		q(t.Name), q("count"), q("count"), q("last_request"), q("key"), q("count"), cols)
	bb.raw = func(ctx context.Context, key string, now int64) (int64, error) {
		var id, count, last int64
		var k string
		err := pool.QueryRow(ctx, upd, 1, now, key, capacity).Scan(&id, &k, &count, &last)
		return count, err
	}
	floor := fmt.Sprintf("UPDATE %s SET %s = %s + 1 WHERE %s = $1 AND %s > $2 AND %s < $3 RETURNING %s",
		q(t.Name), q("count"), q("count"), q("key"), q("last_request"), q("count"), q("count"))
	bb.floor = func(ctx context.Context, key string, now int64) (int64, error) {
		var count int64
		err := pool.QueryRow(ctx, floor, key, now-time.Hour.Milliseconds(), capacity).Scan(&count)
		return count, err
	}
	return bb
}

// capacity keeps the guard true for the whole run, so both sides always write.
const capacity = int64(1) << 60

func (bb *benchDB) increment(ctx context.Context, key string, now int64) (int64, error) {
	row, ok, err := bb.db.IncrementOne(ctx, core.IncrementRequest{
		Model:     core.ModelRateLimit,
		Where:     []core.Where{core.Eq("key", key), core.Lt("count", capacity)},
		Increment: map[string]int64{"count": 1},
		Set:       map[string]any{"lastRequest": now},
	})
	if err == nil && !ok {
		err = fmt.Errorf("key %q did not match", key)
	}
	return row.Int("count"), err
}

// compare runs b.N operations of each kind, interleaved: every goroutine
// alternates raw and sluice calls and times each one, so load from other
// processes on the machine falls on both alike.
func (bb *benchDB) compare(b *testing.B, keys, workers int, hand, sluice func(context.Context, string, int64) (int64, error)) {
	ctx := context.Background()
	kinds := [2]func(context.Context, string, int64) (int64, error){hand, sluice}
	var spent [2]atomic.Int64 // nanoseconds inside calls, per kind
	lat := [2][]int64{make([]int64, b.N), make([]int64, b.N)}
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	total := 2 * int64(b.N)
	b.ResetTimer()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(b.N)))
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				kind := i % 2
				key := bb.keys[rng.IntN(keys)]
				start := time.Now()
				_, err := kinds[kind](ctx, key, start.UnixMilli())
				d := int64(time.Since(start))
				spent[kind].Add(d)
				lat[kind][i/2] = d
				if err != nil {
					once.Do(func() { firstErr = err })
					next.Store(total)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	raw, sl := float64(spent[0].Load()), float64(spent[1].Load())
	// Each goroutine is closed-loop, so throughput is goroutines / latency:
	// the latency ratio is the throughput ratio.
	b.ReportMetric(sl/float64(b.N), "sluice-ns/op")
	b.ReportMetric(raw/float64(b.N), "raw-ns/op")
	b.ReportMetric(raw/sl, "x-raw")
	// The same ratio on medians, which one stall of the machine cannot move.
	b.ReportMetric(float64(median(lat[0]))/float64(median(lat[1])), "x-raw-p50")
}

func median(d []int64) int64 {
	slices.Sort(d)
	return d[len(d)/2]
}
