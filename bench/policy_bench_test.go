package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// policyChunk is how many decisions each side makes per turn.
const policyChunk = 200

// BenchmarkPolicyRatio compares, on PostgreSQL (SLUICE_POSTGRES_DSN), a
// two-rule policy (ConsumePolicy: one statement once the rows exist)
// with one rule (Consume: one guarded write), in interleaved turns
// of policyChunk decisions on the same keys, so that a loaded machine
// weighs on both alike. One op is one decision of each; "x-policy" is the
// policy's wall time over the rule's, "x-floor" the same for hand-written
// guarded UPDATEs of two rows and of one, taking turns with them. Every
// decision is admitted (limits never reached), over 1000 keys, with 1 and
// 8 goroutines; "rule-trips" and "policy-trips" count one decision's
// round trips.
func BenchmarkPolicyRatio(b *testing.B) {
	ctx := context.Background()
	db := benchPostgres(b, "sluicebench_policy")
	l, err := ratelimit.New(ratelimit.Database(db))
	if err != nil {
		b.Fatal(err)
	}
	rule := ratelimit.Rule{Name: "burst", Window: time.Hour, Max: 1 << 40}
	policy := ratelimit.Policy{rule, {Name: "daily", Window: 24 * time.Hour, Max: 1 << 40}}
	one := func(ctx context.Context, key string) (bool, error) {
		d, err := l.Consume(ctx, key, rule)
		return d.Allowed, err
	}
	two := func(ctx context.Context, key string) (bool, error) {
		d, err := l.ConsumePolicy(ctx, key, policy, 1)
		return d.Allowed, err
	}
	// The floors: one guarded UPDATE by hand of one row, and of two rows
	// in one autocommit statement (what a policy of two rules writes, with
	// no all-or-nothing judgment): the cost of a second row written, on
	// this machine, whatever the library does.
	pool := db.Adapter().(*sluicesql.Adapter).Unwrap().(*sql.DB)
	table, _ := db.Schema().Table(core.ModelRateLimit)
	floorOne := fmt.Sprintf(`UPDATE %q SET "count" = "count" + 1 WHERE "key" = $1 AND "count" < $2`, table.Name)
	floorTwo := fmt.Sprintf(`UPDATE %q SET "count" = "count" + 1 WHERE "key" IN ($1, $2) AND "count" < $3`, table.Name)
	guarded := func(q string, args func(key string) []any, want int64) func(context.Context, string) (bool, error) {
		return func(ctx context.Context, key string) (bool, error) {
			res, err := pool.ExecContext(ctx, q, args(key)...)
			if err != nil {
				return false, err
			}
			n, err := res.RowsAffected()
			return n == want, err
		}
	}
	one1 := guarded(floorOne, func(k string) []any { return []any{k, rule.Max} }, 1)
	two1 := guarded(floorTwo, func(k string) []any {
		return []any{"{" + k + "}" + ratelimit.PolicySeparator + "burst", "{" + k + "}" + ratelimit.PolicySeparator + "daily", rule.Max}
	}, 2)
	sides := []func(context.Context, string) (bool, error){one, two, one1, two1}
	// Every row in place, then the table analysed, as autovacuum would
	// analyse a table in service: every side's statements then plan on
	// the table's real statistics (a hand-written IN list on a table never
	// analysed plans a sequential scan; sluice's own statement does not,
	// see TestPolicyStatementReadsByIndex).
	for _, side := range sides {
		policyTurn(b, side, 1, 1000)
	}
	if _, err := pool.ExecContext(ctx, fmt.Sprintf("ANALYZE %q", table.Name)); err != nil {
		b.Fatal(err)
	}
	for _, g := range []int{1, 8} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			wall := interleaved(b, sides, g)
			b.ReportMetric(float64(wall[0].Nanoseconds())/float64(b.N), "rule-ns/op")
			b.ReportMetric(float64(wall[1].Nanoseconds())/float64(b.N), "policy-ns/op")
			b.ReportMetric(float64(wall[1])/float64(wall[0]), "x-policy")
			b.ReportMetric(float64(wall[3])/float64(wall[2]), "x-floor")
			for i, name := range []string{"rule-trips", "policy-trips"} {
				cctx, trips := driver.WithRoundTrips(ctx)
				if _, err := sides[i](cctx, "k0"); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(trips.Count()), name)
			}
		})
	}
}

// policyTurn makes n decisions over g goroutines, on keys k0…k999, and
// returns the wall time; every decision must be admitted.
func policyTurn(b *testing.B, decide func(context.Context, string) (bool, error), g, n int) time.Duration {
	ctx := context.Background()
	var wg sync.WaitGroup
	start := time.Now()
	for j := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := j; i < n; i += g {
				ok, err := decide(ctx, fmt.Sprintf("k%d", i%1000))
				if err != nil || !ok {
					b.Errorf("decision %d: admitted %v, %v", i, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// benchPostgres opens a pool on SLUICE_POSTGRES_DSN (skipping b without
// it) and a core.DB on a rate-limit table of its own named after prefix,
// dropped and closed when b ends.
func benchPostgres(b *testing.B, prefix string) *core.DB {
	dsn := os.Getenv("SLUICE_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("SLUICE_POSTGRES_DSN is not set")
	}
	ctx := context.Background()
	pool, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = pool.Close() })
	pool.SetMaxOpenConns(16)
	pool.SetMaxIdleConns(16)
	table := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	schema, err := core.NewSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: table}})
	if err != nil {
		b.Fatal(err)
	}
	db, err := sluicesql.Open(pool, sluicesql.Postgres, core.WithSchema(schema))
	if err != nil {
		b.Fatal(err)
	}
	if err := db.CreateTables(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = pool.ExecContext(ctx, `DROP TABLE "`+table+`"`) })
	return db
}

// interleaved warms every key on every side (steady state, rows in
// place), then runs b.N decisions of each side over g goroutines in
// turns of policyChunk, each round starting one side later than the last
// (no side always follows the same one), and returns each side's wall
// time.
func interleaved(b *testing.B, sides []func(context.Context, string) (bool, error), g int) []time.Duration {
	for _, side := range sides {
		policyTurn(b, side, g, 1000)
	}
	wall := make([]time.Duration, len(sides))
	b.ResetTimer()
	for round, done := 0, 0; done < b.N; round++ {
		n := min(policyChunk, b.N-done)
		for k := range sides {
			i := (k + round) % len(sides)
			wall[i] += policyTurn(b, sides[i], g, n)
		}
		done += n
	}
	b.StopTimer()
	return wall
}
