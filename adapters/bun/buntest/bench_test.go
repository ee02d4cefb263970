package buntest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adapters/bun"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
	"github.com/uptrace/bun"
)

// BenchmarkIncrementOne compares the adapter's IncrementOne, called through
// core.DB, with the same guarded statement written by hand in database/sql
// with placeholders, on the same database in the same run, taking turns
// call by call (see run). Metrics: raw-ns/op and sluice-ns/op (mean latency
// divided by the number of goroutines: wall time per call at full load) and
// x-raw, sluice's throughput as a fraction of raw's (1 means as fast). The
// benchmark's own ns/op is the wall time of one raw plus one sluice call.
// Both sides share one connection pool, one connection per goroutine.
//
//	go test -run '^$' -bench IncrementOne -benchtime 3000x
func BenchmarkIncrementOne(b *testing.B) {
	for _, tc := range targets[:3] {
		b.Run(tc.name, func(b *testing.B) {
			env := newBenchEnv(b, tc.tg(b))
			for _, keys := range []int{1, benchKeys} {
				for _, g := range []int{1, 32} {
					b.Run(fmt.Sprintf("keys=%d/goroutines=%d", keys, g), func(b *testing.B) { env.run(b, keys, g) })
				}
			}
		})
	}
}

const (
	benchKeys = 10000
	benchMax  = int64(1) << 62 // the guard's cap: never reached, every call succeeds
)

type benchEnv struct {
	tg     target
	raw    *sql.DB // bdb's pool, for the hand-written side
	bdb    *bun.DB
	db     *core.DB
	table  *driver.Table
	rawSQL string
}

func newBenchEnv(b *testing.B, tg target) *benchEnv {
	ctx := context.Background()
	bdb, err := tg.open()
	if err != nil {
		b.Fatal(err)
	}
	bdb.SetMaxOpenConns(32)
	bdb.SetMaxIdleConns(32)
	tag := fmt.Sprintf("bench_%d", time.Now().UnixNano()%1e9)
	s := core.MustSchema(core.Naming{Tables: map[string]string{
		core.ModelRateLimit: "rl_" + tag, core.ModelAPIKey: "ak_" + tag, core.ModelRerolledKey: "rk_" + tag, core.ModelAPIKeyLimit: "kl_" + tag, core.ModelAPIKeyRefill: "kr_" + tag}})
	ddl, err := gen.DDL(s, tg.dialect)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, stmt := range gen.DropDDL(s, tg.dialect) {
			if _, err := bdb.DB.ExecContext(ctx, stmt); err != nil {
				b.Error(err)
			}
		}
		bdb.Close()
	})
	for _, stmt := range ddl {
		if _, err := bdb.DB.ExecContext(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
	t, _ := s.Table(core.ModelRateLimit)
	q := tg.dialect.Quote
	for start := 0; start < benchKeys; start += 1000 {
		var rows []string
		for i := start; i < start+1000; i++ {
			rows = append(rows, fmt.Sprintf("('%s', 0, 0)", benchKey(i)))
		}
		_, err := bdb.DB.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (%s, %s, %s) VALUES %s",
			q(t.Name), q("key"), q("count"), q("last_request"), strings.Join(rows, ", ")))
		if err != nil {
			b.Fatal(err)
		}
	}
	db, err := sluicebun.Open(bdb, core.WithSchema(s))
	if err != nil {
		b.Fatal(err)
	}
	ph := func(n int) string { // placeholder n (1-based)
		if tg.dialect == gen.Postgres {
			return fmt.Sprintf("$%d", n)
		}
		return "?"
	}
	rawSQL := fmt.Sprintf("UPDATE %[1]s SET %[2]s = %[2]s + %[5]s, %[3]s = %[6]s WHERE %[4]s = %[7]s AND %[2]s < %[8]s RETURNING %[9]s, %[4]s, %[2]s, %[3]s",
		q(t.Name), q("count"), q("last_request"), q("key"), ph(1), ph(2), ph(3), ph(4), q("id"))
	return &benchEnv{tg: tg, raw: bdb.DB, bdb: bdb, db: db, table: t, rawSQL: rawSQL}
}

func benchKey(i int) string { return fmt.Sprintf("key-%05d", i) }

// rawOp is the hand-written database/sql version of the sluice call.
func (e *benchEnv) rawOp(ctx context.Context, key string, now int64) error {
	var id, count, last int64
	var k string
	if e.tg.dialect != gen.MySQL {
		return e.raw.QueryRowContext(ctx, e.rawSQL, 1, now, key, benchMax).Scan(&id, &k, &count, &last)
	}
	// MySQL has no UPDATE … RETURNING: lock, update, read back.
	q := e.tg.dialect.Quote
	tx, err := e.raw.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	name := q(e.table.Name)
	err = tx.QueryRowContext(ctx, "SELECT `id` FROM "+name+" WHERE `key` = ? AND `count` < ? ORDER BY `id` LIMIT 1 FOR UPDATE", key, benchMax).Scan(&id)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE "+name+" SET `count` = `count` + ?, `last_request` = ? WHERE `id` = ? AND `key` = ? AND `count` < ?", 1, now, id, key, benchMax); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, "SELECT `id`, `key`, `count`, `last_request` FROM "+name+" WHERE `id` = ?", id).Scan(&id, &k, &count, &last); err != nil {
		return err
	}
	return tx.Commit()
}

func (e *benchEnv) sluiceOp(ctx context.Context, key string, now int64) error {
	_, ok, err := e.db.IncrementOne(ctx, core.IncrementRequest{
		Model:     core.ModelRateLimit,
		Where:     []core.Where{core.Eq("key", key), core.Lt("count", benchMax)},
		Increment: map[string]int64{"count": 1},
		Set:       map[string]any{"lastRequest": now},
	})
	if err == nil && !ok {
		err = errors.New("no match")
	}
	return err
}

// run makes b.N raw and b.N sluice calls on keys keys from g goroutines.
// Each goroutine alternates raw and sluice calls and adds up each side's
// latency, so that load from anything else on the machine hits both alike.
// With g goroutines always busy, throughput is g / mean latency, so the
// ratio of mean latencies is the ratio of throughputs.
func (e *benchEnv) run(b *testing.B, keys, g int) {
	ctx := context.Background()
	var next atomic.Int64
	var rawNanos, sluiceNanos, rawCalls, sluiceCalls atomic.Int64
	var firstErr atomic.Pointer[error]
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range g {
		wg.Go(func() {
			for i := w; next.Add(1) <= 2*int64(b.N); i++ {
				key := benchKey(0)
				if keys > 1 {
					key = benchKey(rand.IntN(keys))
				}
				op, nanos, calls := e.rawOp, &rawNanos, &rawCalls
				if i%2 == 1 {
					op, nanos, calls = e.sluiceOp, &sluiceNanos, &sluiceCalls
				}
				start := time.Now()
				if err := op(ctx, key, start.UnixMilli()); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				nanos.Add(int64(time.Since(start)))
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := firstErr.Load(); err != nil {
		b.Fatal(*err)
	}
	rawMean := float64(rawNanos.Load()) / float64(max(rawCalls.Load(), 1))
	sluiceMean := float64(sluiceNanos.Load()) / float64(max(sluiceCalls.Load(), 1))
	b.ReportMetric(rawMean/float64(g), "raw-ns/op")
	b.ReportMetric(sluiceMean/float64(g), "sluice-ns/op")
	b.ReportMetric(rawMean/sluiceMean, "x-raw")
}
