package sqltest_test

import (
	"fmt"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// BenchmarkIncrementOne compares core.DB's IncrementOne through the engine
// with the same guarded write written by hand on the same pool: UPDATE …
// RETURNING on PostgreSQL and SQLite, a bare guarded UPDATE on MySQL
// (which has no RETURNING, so the engine's locking transaction does more).
// Report the ratio of the two ns/op figures of one run.
//
//	go test -run '^$' -bench IncrementOne ./adapters/sql/sqltest
func BenchmarkIncrementOne(b *testing.B) {
	for _, be := range allBackends()[:3] {
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be)
			tb := e.table(b, core.ModelRateLimit)
			row, err := e.db.Create(e.ctx, core.ModelRateLimit, map[string]any{"key": "hot", "count": int64(0), "lastRequest": int64(0)})
			if err != nil {
				b.Fatal(err)
			}
			id := row.Int("id")
			q := quoteFor(be.dialect)
			raw := fmt.Sprintf("UPDATE %s SET %s = %s + %s WHERE %s = %s AND %s < %s",
				q(tb.Name), q("count"), q("count"), ph(be.dialect, 1), q("key"), ph(be.dialect, 2), q("count"), ph(be.dialect, 3))
			if be.dialect != sluicesql.MySQL {
				raw += " RETURNING " + q("id") + ", " + q("key") + ", " + q("count") + ", " + q("last_request")
			}
			b.Run("sluice", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					_, ok, err := e.db.IncrementOne(e.ctx, core.IncrementRequest{Model: core.ModelRateLimit,
						Where:     []core.Where{core.Eq("key", "hot"), core.Lt("count", int64(1)<<62)},
						Increment: map[string]int64{"count": 1}})
					if err != nil || !ok {
						b.Fatal(ok, err)
					}
				}
			})
			b.Run("raw", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if be.dialect == sluicesql.MySQL {
						if _, err := e.sqldb.ExecContext(e.ctx, raw, 1, "hot", int64(1)<<62); err != nil {
							b.Fatal(err)
						}
						continue
					}
					var rid, count, last int64
					var key string
					if err := e.sqldb.QueryRowContext(e.ctx, raw, 1, "hot", int64(1)<<62).Scan(&rid, &key, &count, &last); err != nil || rid != id {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func quoteFor(d sluicesql.Dialect) func(string) string {
	if d == sluicesql.MySQL {
		return func(s string) string { return "`" + s + "`" }
	}
	return func(s string) string { return `"` + s + `"` }
}

func ph(d sluicesql.Dialect, n int) string {
	if d == sluicesql.Postgres {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}

// BenchmarkLimiter is one allowed rate-limit decision through the engine,
// beside the same guarded write by hand: compare allocs/op and ns/op.
//
//	go test -run '^$' -bench Limiter -benchmem ./adapters/sql/sqltest
func BenchmarkLimiter(b *testing.B) {
	for _, be := range allBackends()[:3] {
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be)
			lim, err := ratelimit.New(ratelimit.Database(e.db))
			if err != nil {
				b.Fatal(err)
			}
			rule := ratelimit.Rule{Window: time.Hour, Max: 1 << 40}
			if _, err := lim.Consume(e.ctx, "hot", rule); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if d, err := lim.Consume(e.ctx, "hot", rule); err != nil || !d.Allowed {
					b.Fatal(d, err)
				}
			}
		})
	}
}

// BenchmarkVerify is one allowed API-key verification through the engine,
// in steady state (the key remembered, one guarded write): compare its
// allocs/op with BenchmarkLimiter's, and profile it with -memprofile.
//
//	go test -run '^$' -bench Verify -benchmem ./adapters/sql/sqltest
func BenchmarkVerify(b *testing.B) {
	for _, be := range allBackends()[:3] {
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be)
			m, err := apikey.New(e.db)
			if err != nil {
				b.Fatal(err)
			}
			plain, _, err := m.Create(e.ctx, apikey.CreateParams{ReferenceID: "bench",
				RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Hour, Max: 1 << 40}})
			if err != nil {
				b.Fatal(err)
			}
			if r, err := m.Verify(e.ctx, plain); err != nil || !r.Valid {
				b.Fatal(r, err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if r, err := m.Verify(e.ctx, plain); err != nil || !r.Valid {
					b.Fatal(r, err)
				}
			}
		})
	}
}
