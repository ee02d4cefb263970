package gormtest_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sluicegorm "github.com/sluice-go/sluice/adapters/gorm"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/gen"
)

// BenchmarkIncrementOne compares this adapter's IncrementOne, called through
// core.DB the way the rate limiter calls it, with the same guarded statement
// written by hand with database/sql, on the same connection pool, in the
// same run: every goroutine alternates one raw and one sluice operation, so
// both see the same load and contention. ns/op covers both; raw-ns/op and
// sluice-ns/op are the mean latency of each, x-raw is sluice's throughput
// relative to raw (raw-ns/op ÷ sluice-ns/op; 1 means no cost), and
// x-raw-p50 the same ratio of median latencies.
//
// The operation is a rate-limit hit: key = ? AND count < max, count + 1,
// lastRequest = now. "hot" hammers one key; "uniform" picks one of 10 000.
//
//	go test -run '^$' -bench IncrementOne -benchtime 4000x
func BenchmarkIncrementOne(b *testing.B) {
	for _, bk := range backends()[:3] { // MySQLFoundRows adds nothing here
		b.Run(bk.name, func(b *testing.B) {
			env := newBenchEnv(b, bk)
			for _, keys := range []int{1, 10000} {
				name := "hot"
				if keys > 1 {
					name = "uniform10k"
				}
				for _, g := range []int{1, 32} {
					b.Run(fmt.Sprintf("%s/g%d", name, g), func(b *testing.B) { env.run(b, keys, g) })
				}
			}
		})
	}
}

// BenchmarkLimiter is one allowed rate-limit decision (ratelimit.Limiter.
// Consume on database storage) through this adapter on one hot key: compare
// its allocs/op with the engine's (adapters/sql/sqltest) and the
// hand-written floor's.
//
//	go test -run '^$' -bench Limiter -benchmem
func BenchmarkLimiter(b *testing.B) {
	for _, bk := range backends()[:3] {
		b.Run(bk.name, func(b *testing.B) {
			env := newBenchEnv(b, bk)
			lim, err := ratelimit.New(ratelimit.Database(env.db))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			rule := ratelimit.Rule{Window: time.Hour, Max: benchMax}
			if _, err := lim.Consume(ctx, "hot", rule); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if d, err := lim.Consume(ctx, "hot", rule); err != nil || !d.Allowed {
					b.Fatal(d, err)
				}
			}
		})
	}
}

// benchEnv is a rateLimit table with 10 000 keys, a core.DB over this
// adapter, and the hand-written equivalent on the same *sql.DB.
type benchEnv struct {
	db   *core.DB
	raw  func(ctx context.Context, key string, now int64) error
	keys []string
}

const benchMax = int64(1) << 60 // the guard that always holds, as a limiter far from its cap

func newBenchEnv(b *testing.B, bk backend) *benchEnv {
	ctx := context.Background()
	dsn := bk.dsn(b)
	if bk.dialect == gen.SQLite {
		dsn = "file:" + b.TempDir() + "/bench.db" + adaptertest.SQLiteOptions
	}
	g, err := openGorm(bk.dialect, dsn)
	if err != nil {
		b.Fatal(err)
	}
	pool, err := g.DB()
	if err != nil {
		b.Fatal(err)
	}
	conns := 16 // the test servers are shared: 32 goroutines queue for 16 connections
	if bk.dialect == gen.SQLite {
		// SQLite has one writer at a time, and its busy handler polls with
		// growing sleeps: 32 connections fighting for the lock make some
		// wait past busy_timeout. A few connections queue the rest in Go.
		conns = 4
	}
	pool.SetMaxOpenConns(conns)
	pool.SetMaxIdleConns(conns) // the default of 2 would reconnect all the time
	table := fmt.Sprintf("bench_rl_%d", time.Now().UnixNano()%1e9)
	schema := core.MustSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: table, core.ModelAPIKey: table + "_ak", core.ModelRerolledKey: table + "_rk", core.ModelAPIKeyLimit: table + "_kl", core.ModelAPIKeyRefill: table + "_kr"}})
	ddl, err := gen.DDL(schema, bk.dialect)
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range ddl {
		if err := g.Exec(q).Error; err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		for _, q := range gen.DropDDL(schema, bk.dialect) {
			g.Exec(q)
		}
		pool.Close()
	})
	db, err := sluicegorm.Open(g, core.WithSchema(schema))
	if err != nil {
		b.Fatal(err)
	}
	env := &benchEnv{db: db}
	for i := range 10000 {
		env.keys = append(env.keys, fmt.Sprintf("client:%05d", i))
	}
	// Seed in batches through gorm, outside the timed part.
	q := bk.dialect.Quote
	for i := 0; i < len(env.keys); i += 500 {
		var vals []string
		var args []any
		for _, k := range env.keys[i:min(i+500, len(env.keys))] {
			vals = append(vals, "(?, 0, 0)")
			args = append(args, k)
		}
		ins := "INSERT INTO " + q(table) + " (" + q("key") + ", " + q("count") + ", " + q("last_request") + ") VALUES " + strings.Join(vals, ", ")
		if err := g.Exec(ins, args...).Error; err != nil {
			b.Fatal(err)
		}
	}
	env.raw = rawIncrement(pool, bk.dialect, table)
	_ = ctx
	return env
}

// rawIncrement is the hand-written guarded increment on database/sql, what
// an application without sluice would write for each dialect.
func rawIncrement(pool *sql.DB, d gen.Dialect, table string) func(ctx context.Context, key string, now int64) error {
	var id, count, last int64
	var k string
	cols := `"id", "key", "count", "last_request"`
	switch d {
	case gen.Postgres:
		q := `UPDATE "` + table + `" SET "count" = "count" + $1, "last_request" = $2 WHERE "key" = $3 AND "count" < $4 RETURNING ` + cols
		return func(ctx context.Context, key string, now int64) error {
			return pool.QueryRowContext(ctx, q, 1, now, key, benchMax).Scan(&id, &k, &count, &last)
		}
	case gen.SQLite:
		q := `UPDATE "` + table + `" SET "count" = "count" + ?, "last_request" = ? WHERE "key" = ? AND "count" < ? RETURNING ` + cols
		return func(ctx context.Context, key string, now int64) error {
			return pool.QueryRowContext(ctx, q, 1, now, key, benchMax).Scan(&id, &k, &count, &last)
		}
	}
	lock := "SELECT `id` FROM `" + table + "` WHERE `key` = ? AND `count` < ? ORDER BY `id` LIMIT 1 FOR UPDATE"
	upd := "UPDATE `" + table + "` SET `count` = `count` + ?, `last_request` = ? WHERE `id` = ? AND `key` = ? AND `count` < ?"
	get := "SELECT `id`, `key`, `count`, `last_request` FROM `" + table + "` WHERE `id` = ? FOR UPDATE"
	return func(ctx context.Context, key string, now int64) error {
		tx, err := pool.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var pk int64
		if err := tx.QueryRowContext(ctx, lock, key, benchMax).Scan(&pk); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, upd, 1, now, pk, key, benchMax); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, get, pk).Scan(&id, &k, &count, &last); err != nil {
			return err
		}
		return tx.Commit()
	}
}

func (env *benchEnv) sluice(ctx context.Context, key string, now int64) error {
	_, ok, err := env.db.IncrementOne(ctx, core.IncrementRequest{
		Model:     core.ModelRateLimit,
		Where:     []core.Where{core.Eq("key", key), core.Lt("count", benchMax)},
		Increment: map[string]int64{"count": 1},
		Set:       map[string]any{"lastRequest": now},
	})
	if err == nil && !ok {
		err = fmt.Errorf("no match for %q", key)
	}
	return err
}

// run does b.N operations on goroutines goroutines, alternating raw and
// sluice, and reports each one's mean latency and the ratio of the means
// (the throughput ratio), and the same for medians, which the latency
// spikes of a shared test machine (fsync, other tenants) disturb less.
func (env *benchEnv) run(b *testing.B, keys, goroutines int) {
	ctx := context.Background()
	var next atomic.Int64
	var mu sync.Mutex
	var raw, slc []time.Duration
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	b.ResetTimer()
	for gi := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(gi), 42))
			var myRaw, mySluice []time.Duration
			defer func() {
				mu.Lock()
				raw, slc = append(raw, myRaw...), append(slc, mySluice...)
				mu.Unlock()
			}()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				key := env.keys[rng.IntN(keys)]
				now := time.Now().UnixMilli()
				start := time.Now()
				var err error
				if i%2 == 0 {
					err = env.raw(ctx, key, now)
					myRaw = append(myRaw, time.Since(start))
				} else {
					err = env.sluice(ctx, key, now)
					mySluice = append(mySluice, time.Since(start))
				}
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	if len(raw) == 0 || len(slc) == 0 {
		return // b.N == 1: the calibration run
	}
	r, s := mean(raw), mean(slc)
	b.ReportMetric(r, "raw-ns/op")
	b.ReportMetric(s, "sluice-ns/op")
	b.ReportMetric(r/s, "x-raw")
	b.ReportMetric(median(raw)/median(slc), "x-raw-p50")
}

func mean(d []time.Duration) float64 {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return float64(sum) / float64(len(d))
}

func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2])
}
