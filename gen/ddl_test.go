package gen

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
)

// scriptStatements splits a generated SQL file back into statements,
// dropping its comment lines.
func scriptStatements(data []byte) []string {
	var body []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "--") {
			body = append(body, line)
		}
	}
	var stmts []string
	for _, s := range strings.Split(strings.Join(body, "\n"), ";\n") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// timeArg is how a time is bound on each dialect: core.FormatTime text on
// SQLite, as the adapters bind it.
func timeArg(d Dialect, t time.Time) any {
	if d == SQLite {
		return core.FormatTime(t)
	}
	return t
}

// TestDDLApplies creates every table on each database from the generated
// migration, twice (the statements are idempotent), checks that the
// defaults work and that the catalog then matches the schema exactly, and
// drops the tables with the down migration.
func TestDDLApplies(t *testing.T) {
	ctx := context.Background()
	for _, tdb := range testDBs(t) {
		for _, preset := range []core.Preset{core.SnakeCase, core.BetterAuth} {
			t.Run(string(tdb.dialect)+"/"+presetName(preset), func(t *testing.T) {
				db := tdb.open(t)
				cfg := Config{Target: SQL, Dialect: tdb.dialect, Naming: uniqueNaming(t, core.Naming{Preset: preset})}
				s, err := cfg.Schema()
				if err != nil {
					t.Fatal(err)
				}
				dropAfter(t, db, s, tdb.dialect)
				files := generateMap(t, cfg)
				up := scriptStatements(files["0001_sluice.up.sql"])
				if want, _ := DDL(s, tdb.dialect); strings.Join(up, "\n") != strings.Join(want, "\n") {
					t.Fatalf("up migration differs from DDL:\n%s\n---\n%s", strings.Join(up, "\n"), strings.Join(want, "\n"))
				}
				exec(t, db, up)
				exec(t, db, up)

				rl, _ := s.Table(core.ModelRateLimit)
				ak, _ := s.Table(core.ModelAPIKey)
				q := tdb.dialect.Quote
				col := func(tb *core.Table, field string) string { c, _ := tb.Column(field); return q(c.Name) }
				ph := func(n int) string { // placeholders
					var p []string
					for i := 1; i <= n; i++ {
						if tdb.dialect == Postgres {
							p = append(p, "$"+string(rune('0'+i)))
						} else {
							p = append(p, "?")
						}
					}
					return strings.Join(p, ", ")
				}
				exec1 := func(query string, args ...any) {
					t.Helper()
					if _, err := db.ExecContext(ctx, query, args...); err != nil {
						t.Fatalf("%v\n%s", err, query)
					}
				}
				exec1("INSERT INTO "+q(rl.Name)+" ("+col(rl, "key")+") VALUES ("+ph(1)+")", "k1")
				var count, last int64
				if err := db.QueryRowContext(ctx, "SELECT "+col(rl, "count")+", "+col(rl, "lastRequest")+" FROM "+q(rl.Name)).Scan(&count, &last); err != nil {
					t.Fatal(err)
				}
				if count != 0 || last != 0 {
					t.Errorf("rateLimit defaults: count %d, lastRequest %d; want 0, 0", count, last)
				}
				now := time.Date(2024, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
				exec1("INSERT INTO "+q(ak.Name)+" ("+col(ak, "key")+", "+col(ak, "referenceId")+", "+col(ak, "createdAt")+", "+col(ak, "updatedAt")+") VALUES ("+ph(4)+")",
					"hash", "user-1", timeArg(tdb.dialect, now), timeArg(tdb.dialect, now))
				var configID string
				var enabled, rlEnabled bool
				var requestCount int64
				if err := db.QueryRowContext(ctx, "SELECT "+col(ak, "configId")+", "+col(ak, "enabled")+", "+col(ak, "rateLimitEnabled")+", "+col(ak, "requestCount")+" FROM "+q(ak.Name)).
					Scan(&configID, &enabled, &rlEnabled, &requestCount); err != nil {
					t.Fatal(err)
				}
				if configID != "default" || !enabled || !rlEnabled || requestCount != 0 {
					t.Errorf("apikey defaults: %q %v %v %d; want \"default\" true true 0", configID, enabled, rlEnabled, requestCount)
				}
				if _, err := db.ExecContext(ctx, "INSERT INTO "+q(rl.Name)+" ("+col(rl, "key")+") VALUES ("+ph(1)+")", "k1"); err == nil {
					t.Error("a second row with the same key was accepted: the unique index is missing")
				}

				plan, err := DiffDB(ctx, db, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !plan.Empty() {
					t.Errorf("diff of a freshly created schema is not empty:\n%s\n%s", strings.Join(plan.Statements, "\n"), strings.Join(plan.Left, "\n"))
				}

				exec(t, db, scriptStatements(files["0001_sluice.down.sql"]))
				cat, err := ReadCatalog(ctx, db, tdb.dialect, []string{rl.Name, ak.Name})
				if err != nil {
					t.Fatal(err)
				}
				if len(cat) != 0 {
					t.Errorf("tables left after the down migration: %v", cat)
				}
			})
		}
	}
}

// generateMap is Generate as a map from file name to content.
func generateMap(t *testing.T, cfg Config) map[string][]byte {
	t.Helper()
	files, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, f := range files {
		m[f.Name] = f.Data
	}
	return m
}

// TestTrailingSpacesAreDistinctKeys checks on each database that keys
// differing only by trailing spaces are different rows under the unique
// indexes: MySQL and MariaDB compare with PAD SPACE under utf8mb4_bin,
// where "k" and "k " would share one counter.
func TestTrailingSpacesAreDistinctKeys(t *testing.T) {
	ctx := context.Background()
	for _, tdb := range testDBs(t) {
		t.Run(string(tdb.dialect), func(t *testing.T) {
			d := tdb.dialect
			db := tdb.open(t)
			s, err := core.NewSchema(uniqueNaming(t, core.Naming{}))
			if err != nil {
				t.Fatal(err)
			}
			dropAfter(t, db, s, d)
			stmts, err := DDL(s, d)
			if err != nil {
				t.Fatal(err)
			}
			exec(t, db, stmts)
			for _, tb := range s.Tables() {
				key, _ := tb.Column("key")
				insertRow(t, db, d, tb, key.Name, "k", true)
				insertRow(t, db, d, tb, key.Name, "k ", true)
				insertRow(t, db, d, tb, key.Name, "k ", false)
				var n int
				q := "SELECT COUNT(*) FROM " + d.Quote(tb.Name) + " WHERE " + d.Quote(key.Name) + " = 'k'"
				if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("%s: %d rows match key 'k'; want 1 (the row of 'k ' must not)", tb.Name, n)
				}
			}
		})
	}
}
