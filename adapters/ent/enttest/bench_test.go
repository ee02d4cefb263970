package enttest_test

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

	"entgo.io/ent/dialect"

	sluiceent "github.com/sluice-go/sluice/adapters/ent"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
)

// BenchmarkIncrementOne compares this adapter's IncrementOne, called through
// core.DB, with the same guarded statement written by hand in database/sql,
// on the same pool of the same database in the same run: one hot key, and
// 10 000 keys picked uniformly, at 1 and 32 goroutines. Raw SQL and sluice
// calls alternate within each b.N, so drift hits both alike.
//
// Metrics: sluice-ns/op and raw-ns/op (mean latency of one call) and x-raw,
// sluice's throughput as a fraction of raw SQL's (1.0 = as fast), and
// x-raw-p50, the same on median latencies, robust to stalls of a loaded
// machine; ns/op covers one call of each kind. Run:
//
//	SLUICE_POSTGRES_DSN=... go test -run '^$' -bench IncrementOne ./adapters/ent/enttest
func BenchmarkIncrementOne(b *testing.B) {
	for _, be := range []backend{postgresBackend(), postgresNoSyncBackend(), mysqlBackend(false), sqliteBackend()} {
		b.Run(be.name, func(b *testing.B) {
			bb := newBenchDB(b, be)
			for _, keys := range []int{1, 10_000} {
				for _, workers := range []int{1, 32} {
					b.Run(fmt.Sprintf("keys=%d/goroutines=%d", keys, workers), func(b *testing.B) {
						bb.compare(b, keys, workers)
					})
				}
			}
		})
	}
}

// postgresNoSyncBackend is PostgreSQL with synchronous_commit off for the
// session: commits no longer wait for the disk, so the client's own cost,
// which is what sluice adds, weighs most.
func postgresNoSyncBackend() backend {
	be := postgresBackend()
	be.name = "postgres-nosync"
	be.dsn = func(t testing.TB) string {
		dsn := adaptertest.PostgresDSN(t)
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + "options=-c%20synchronous_commit%3Doff"
	}
	return be
}

// benchDB is a rate-limit table with 10 000 keys, a sluice DB on it and the
// hand-written statement, sharing one pool.
type benchDB struct {
	be    backend
	pool  *sql.DB
	db    *core.DB
	table *driver.Table
	keys  []string
	raw   func(ctx context.Context, key string, now int64) (int64, error)
}

func newBenchDB(b *testing.B, be backend) *benchDB {
	ctx := context.Background()
	drv, err := be.open(be.dsn(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = drv.Close() })
	pool := drv.DB()
	pool.SetMaxOpenConns(32) // one per goroutine
	pool.SetMaxIdleConns(32) // database/sql keeps 2 by default: 32 goroutines would reconnect all the time
	tag := randTag()
	s := core.MustSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: fmt.Sprintf("bench_rl_%d", tag),
		core.ModelAPIKey: fmt.Sprintf("bench_ak_%d", tag), core.ModelRerolledKey: fmt.Sprintf("bench_rk_%d", tag),
		core.ModelAPIKeyLimit: fmt.Sprintf("bench_kl_%d", tag), core.ModelAPIKeyRefill: fmt.Sprintf("bench_kr_%d", tag)}})
	t, _ := s.Table(core.ModelRateLimit)
	stmts, err := gen.DDL(s, be.gen)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, q := range gen.DropDDL(s, be.gen) {
			_, _ = pool.ExecContext(ctx, q)
		}
	})
	for _, q := range stmts {
		if _, err := pool.ExecContext(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	bb := &benchDB{be: be, pool: pool, table: t}
	bb.db, err = sluiceent.Open(drv, core.WithSchema(s))
	if err != nil {
		b.Fatal(err)
	}
	q := be.gen.Quote
	for i := range 10_000 {
		bb.keys = append(bb.keys, fmt.Sprintf("key-%05d", i))
	}
	for start := 0; start < len(bb.keys); start += 500 {
		var vals []string
		var args []any
		for i, k := range bb.keys[start : start+500] {
			if be.dialect == dialect.Postgres {
				vals = append(vals, fmt.Sprintf("($%d, 0, 0)", i+1))
			} else {
				vals = append(vals, "(?, 0, 0)")
			}
			args = append(args, k)
		}
		ins := fmt.Sprintf("INSERT INTO %s (%s, %s, %s) VALUES %s", q(t.Name), q("key"), q("count"), q("last_request"), strings.Join(vals, ", "))
		if _, err := pool.ExecContext(ctx, ins, args...); err != nil {
			b.Fatal(err)
		}
	}
	bb.raw = bb.rawStatement()
	return bb
}

// capacity keeps the guard true for the whole run, so both sides always write.
const capacity = int64(1) << 60

// rawStatement is the hand-written equivalent of the adapter's IncrementOne
// for a rate-limit request: count + 1, last_request set, guarded on the key
// and count < capacity, returning the row.
func (bb *benchDB) rawStatement() func(ctx context.Context, key string, now int64) (int64, error) {
	q, t := bb.be.gen.Quote, bb.table.Name
	cols := strings.Join([]string{q("id"), q("key"), q("count"), q("last_request")}, ", ")
	switch bb.be.dialect {
	case dialect.MySQL:
		lock := fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? AND %s < ? ORDER BY %s LIMIT 1 FOR UPDATE", q("id"), q(t), q("key"), q("count"), q("id"))
		upd := fmt.Sprintf("UPDATE %s SET %s = %s + ?, %s = ? WHERE %s = ? AND %s = ? AND %s < ?", q(t), q("count"), q("count"), q("last_request"), q("id"), q("key"), q("count"))
		read := fmt.Sprintf("SELECT %s FROM %s WHERE %s = ?", cols, q(t), q("id"))
		return func(ctx context.Context, key string, now int64) (int64, error) {
			tx, err := bb.pool.BeginTx(ctx, nil)
			if err != nil {
				return 0, err
			}
			defer tx.Rollback()
			var id, count, last int64
			var k string
			if err := tx.QueryRowContext(ctx, lock, key, capacity).Scan(&id); err != nil {
				return 0, err
			}
			if _, err := tx.ExecContext(ctx, upd, 1, now, id, key, capacity); err != nil {
				return 0, err
			}
			if err := tx.QueryRowContext(ctx, read, id).Scan(&id, &k, &count, &last); err != nil {
				return 0, err
			}
			return count, tx.Commit()
		}
	}
	p := func(n int) string { return "?" }
	if bb.be.dialect == dialect.Postgres {
		p = func(n int) string { return fmt.Sprintf("$%d", n) }
	}
	upd := fmt.Sprintf("UPDATE %s SET %s = %s + %s, %s = %s WHERE %s = %s AND %s < %s RETURNING %s",
		q(t), q("count"), q("count"), p(1), q("last_request"), p(2), q("key"), p(3), q("count"), p(4), cols)
	return func(ctx context.Context, key string, now int64) (int64, error) {
		var id, count, last int64
		var k string
		err := bb.pool.QueryRowContext(ctx, upd, 1, now, key, capacity).Scan(&id, &k, &count, &last)
		return count, err
	}
}

func (bb *benchDB) sluice(ctx context.Context, key string, now int64) (int64, error) {
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
// alternates raw SQL and sluice calls and times each one, so load from
// other processes on the machine falls on both alike.
func (bb *benchDB) compare(b *testing.B, keys, workers int) {
	ctx := context.Background()
	kinds := [2]func(context.Context, string, int64) (int64, error){bb.raw, bb.sluice}
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
	raw, sluice := float64(spent[0].Load()), float64(spent[1].Load())
	// Each goroutine is closed-loop, so throughput is goroutines / latency:
	// the latency ratio is the throughput ratio.
	b.ReportMetric(sluice/float64(b.N), "sluice-ns/op")
	b.ReportMetric(raw/float64(b.N), "raw-ns/op")
	b.ReportMetric(raw/sluice, "x-raw")
	// The same ratio on medians, which one stall of the machine cannot move.
	b.ReportMetric(float64(median(lat[0]))/float64(median(lat[1])), "x-raw-p50")
}

func median(d []int64) int64 {
	slices.Sort(d)
	return d[len(d)/2]
}
