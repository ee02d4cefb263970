package sqltest_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
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
// in steady state (the key remembered, one guarded write), beside the same
// verification written by hand on the same pool: the guarded increment
// found by the key's hash, returning the whole row (on MySQL, which has no
// RETURNING, the UPDATE and then the row's SELECT), scanned into typed
// fields. The hand-written figure is what database/sql and the driver
// cost for a row of this shape alone: compare allocs/op, and profile the
// engine's with -memprofile. On MySQL the two differ in kind: the engine
// reads the row and then writes guarded on all of it, so the row it
// returns is the one its write made, where the hand-written SELECT after
// the UPDATE may see another writer's change.
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
			b.Run("sluice", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if r, err := m.Verify(e.ctx, plain); err != nil || !r.Valid {
						b.Fatal(r, err)
					}
				}
			})
			b.Run("by_hand", func(b *testing.B) {
				verify := verifyByHand(b, e)
				b.ReportAllocs()
				for b.Loop() {
					if err := verify(plain); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// handKey is an API key's row as a hand-written verification scans it.
type handKey struct {
	id, requestCount                                     int64
	configID, key, referenceID                           string
	name, start, prefix, permissions, metadata           sql.NullString
	enabled, rateLimitEnabled                            bool
	window, max, remaining, refillInterval, refillAmount sql.NullInt64
	lastRefillAt, lastRequest, expiresAt                 sql.NullTime
	createdAt, updatedAt                                 time.Time
}

// verifyByHand returns a verification of a rate-limited key without quota
// or refill, written by hand: hash the key, then one guarded UPDATE that
// finds it by hash, checks it is enabled and unexpired, and counts the
// request in its live window, returning the row.
func verifyByHand(b *testing.B, e *env) func(plain string) error {
	tb := e.table(b, core.ModelAPIKey)
	q := quoteFor(e.b.dialect)
	c := func(field string) string {
		col, ok := tb.Column(field)
		if !ok {
			b.Fatalf("no field %q", field)
		}
		return q(col.Name)
	}
	fields := []string{"id", "requestCount", "configId", "key", "referenceId", "name", "start", "prefix",
		"permissions", "metadata", "enabled", "rateLimitEnabled", "rateLimitTimeWindow", "rateLimitMax",
		"remaining", "refillInterval", "refillAmount", "lastRefillAt", "lastRequest", "expiresAt",
		"createdAt", "updatedAt"}
	if len(fields) != len(tb.Columns) {
		b.Fatalf("the hand-written row has %d columns, the table %d", len(fields), len(tb.Columns))
	}
	cols := make([]string, len(fields))
	for i, f := range fields {
		cols[i] = c(f)
	}
	n := 0
	p := func() string { n++; return ph(e.b.dialect, n) }
	update := fmt.Sprintf("UPDATE %s SET %s = %s + 1, %s = %s WHERE %s = %s AND %s AND (%s IS NULL OR %s > %s) AND %s > %s AND %s < %s",
		q(tb.Name), c("requestCount"), c("requestCount"), c("updatedAt"), p(), c("key"), p(), c("enabled"),
		c("expiresAt"), c("expiresAt"), p(), c("lastRequest"), p(), c("requestCount"), c("rateLimitMax"))
	n = 0
	sel := fmt.Sprintf("SELECT %s FROM %s WHERE %s = %s", strings.Join(cols, ", "), q(tb.Name), c("key"), p())
	db, onMySQL, onSQLite := e.sqldb, e.b.dialect == sluicesql.MySQL, e.b.dialect == sluicesql.SQLite
	if onMySQL {
		// The driver parses DATETIME columns into time.Time, and writes
		// the values into the statements as the engine does, so each
		// statement is one round trip (prepared, each would take two).
		db = e.b.open(b, mysqlDSN(b, func(c *mysql.Config) { c.ParseTime = true; c.InterpolateParams = true }))
		b.Cleanup(func() { _ = db.Close() })
	} else {
		update += " RETURNING " + strings.Join(cols, ", ")
	}
	return func(plain string) error {
		var k handKey
		dest := []any{&k.id, &k.requestCount, &k.configID, &k.key, &k.referenceID, &k.name, &k.start, &k.prefix,
			&k.permissions, &k.metadata, &k.enabled, &k.rateLimitEnabled, &k.window, &k.max,
			&k.remaining, &k.refillInterval, &k.refillAmount, &k.lastRefillAt, &k.lastRequest, &k.expiresAt,
			&k.createdAt, &k.updatedAt}
		hash := keystore.Hash(plain)
		now := time.Now().UTC()
		start := now.Add(-time.Hour)
		if onSQLite {
			// SQLite has no time type: the table's times are ISO 8601 text,
			// compared as text.
			now, start := driver.FormatTime(now), driver.FormatTime(start)
			return db.QueryRowContext(e.ctx, update, now, hash, now, start).Scan(dest...)
		}
		if onMySQL {
			res, err := db.ExecContext(e.ctx, update, now, hash, now, start)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return fmt.Errorf("the guarded UPDATE matched %d rows, %v", n, err)
			}
			return db.QueryRowContext(e.ctx, sel, hash).Scan(dest...)
		}
		return db.QueryRowContext(e.ctx, update, now, hash, now, start).Scan(dest...)
	}
}
