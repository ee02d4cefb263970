package main

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// BenchmarkTxChargeRatio compares, on PostgreSQL (SLUICE_POSTGRES_DSN), a
// charge inside the caller's transaction (BEGIN on database/sql,
// limiter.In(tx).Consume, COMMIT) with a plain charge (Consume, one
// autocommit guarded write), in interleaved turns of policyChunk
// decisions on the same keys, so that a loaded machine weighs on both
// alike. One op is one decision of each; "x-tx" is the transactional
// side's wall time over the plain side's. Every decision is admitted,
// over 1000 keys, with 1 and 8 goroutines.
func BenchmarkTxChargeRatio(b *testing.B) {
	db := benchPostgres(b, "sluicebench_tx")
	pool := db.Adapter().(*sluicesql.Adapter).Unwrap().(*sql.DB)
	l, err := ratelimit.New(ratelimit.Database(db))
	if err != nil {
		b.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Hour, Max: 1 << 40}
	plain := func(ctx context.Context, key string) (bool, error) {
		d, err := l.Consume(ctx, key, rule)
		return d.Allowed, err
	}
	inTx := func(ctx context.Context, key string) (bool, error) {
		tx, err := pool.BeginTx(ctx, nil)
		if err != nil {
			return false, err
		}
		d, err := l.In(tx).Consume(ctx, key, rule)
		if err != nil {
			_ = tx.Rollback()
			return false, err
		}
		return d.Allowed, tx.Commit()
	}
	sides := []func(context.Context, string) (bool, error){plain, inTx}
	for _, g := range []int{1, 8} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			wall := interleaved(b, sides, g)
			b.ReportMetric(float64(wall[0].Nanoseconds())/float64(b.N), "plain-ns/op")
			b.ReportMetric(float64(wall[1].Nanoseconds())/float64(b.N), "tx-ns/op")
			b.ReportMetric(float64(wall[1])/float64(wall[0]), "x-tx")
		})
	}
}
