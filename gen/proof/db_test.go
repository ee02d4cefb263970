package proof_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
)

// testDB is one database the DDL and diff tests run on.
type testDB struct {
	dialect gen.Dialect
	driver  string
	dsn     string
}

// testDBs returns SQLite (always) and PostgreSQL and MariaDB/MySQL when
// their environment variables are set; with CI=true a missing one fails.
func testDBs(t *testing.T) []testDB {
	t.Helper()
	dbs := []testDB{{gen.SQLite, "sqlite", "file:" + filepath.Join(t.TempDir(), "gen.db") + "?_pragma=busy_timeout(5000)"}}
	for _, e := range []struct {
		env     string
		dialect gen.Dialect
		driver  string
	}{{"SLUICE_POSTGRES_DSN", gen.Postgres, "pgx"}, {"SLUICE_MYSQL_DSN", gen.MySQL, "mysql"}} {
		dsn := os.Getenv(e.env)
		if dsn == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not set (CI=true requires every database)", e.env)
			}
			t.Logf("%s not set: skipping %s", e.env, e.dialect)
			continue
		}
		dbs = append(dbs, testDB{e.dialect, e.driver, dsn})
	}
	return dbs
}

func (tdb testDB) open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open(tdb.driver, tdb.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.PingContext(context.Background()); err != nil {
		t.Fatalf("%s: %v", tdb.dialect, err)
	}
	return db
}

// uniqueNaming returns naming with table names no other test, or other
// helper sharing the server, uses.
func uniqueNaming(t *testing.T, naming core.Naming) core.Naming {
	t.Helper()
	suffix := uniqueSuffix(t)
	naming.Tables = map[string]string{
		core.ModelRateLimit:    "gen_rl_" + suffix,
		core.ModelAPIKey:       "gen_ak_" + suffix,
		core.ModelRerolledKey:  "gen_rk_" + suffix,
		core.ModelAPIKeyLimit:  "gen_kl_" + suffix,
		core.ModelAPIKeyRefill: "gen_kr_" + suffix,
	}
	return naming
}

// uniqueSuffix returns 8 random hex digits, for names no other test, or
// other helper sharing the server, uses.
func uniqueSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// sqlExecer is what insertRow needs of a *sql.DB.
type sqlExecer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// execAll runs statements, failing the test on the first error.
func execAll(t *testing.T, db *sql.DB, stmts []string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
}

// dropAfter drops the tables of s when the test ends.
func dropAfter(t *testing.T, db *sql.DB, s *core.Schema, d gen.Dialect) {
	t.Cleanup(func() {
		for _, q := range gen.DropDDL(s, d) {
			if _, err := db.ExecContext(context.Background(), q); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
}

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

// timeArg is how a time is bound on each dialect: driver.FormatTime text on
// SQLite, as the adapters bind it.
func timeArg(d gen.Dialect, t time.Time) any {
	if d == gen.SQLite {
		return driver.FormatTime(t)
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
			t.Run(string(tdb.dialect)+"/"+map[core.Preset]string{core.SnakeCase: "snake", core.BetterAuth: "betterauth"}[preset], func(t *testing.T) {
				db := tdb.open(t)
				cfg := gen.Config{Target: gen.SQL, Dialect: tdb.dialect, Naming: uniqueNaming(t, core.Naming{Preset: preset})}
				s, err := cfg.Schema()
				if err != nil {
					t.Fatal(err)
				}
				dropAfter(t, db, s, tdb.dialect)
				files := generateMap(t, cfg)
				up := scriptStatements(files["0001_sluice.up.sql"])
				if want, _ := gen.DDL(s, tdb.dialect); strings.Join(up, "\n") != strings.Join(want, "\n") {
					t.Fatalf("up migration differs from DDL:\n%s\n---\n%s", strings.Join(up, "\n"), strings.Join(want, "\n"))
				}
				execAll(t, db, up)
				execAll(t, db, up)

				rl, _ := s.Table(core.ModelRateLimit)
				ak, _ := s.Table(core.ModelAPIKey)
				q := tdb.dialect.Quote
				col := func(tb *driver.Table, field string) string { c, _ := tb.Column(field); return q(c.Name) }
				ph := func(n int) string { // placeholders
					var p []string
					for i := 1; i <= n; i++ {
						if tdb.dialect == gen.Postgres {
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

				plan, err := gen.DiffDB(ctx, db, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !plan.Empty() {
					t.Errorf("diff of a freshly created schema is not empty:\n%s\n%s", strings.Join(plan.Statements, "\n"), strings.Join(plan.Left, "\n"))
				}

				execAll(t, db, scriptStatements(files["0001_sluice.down.sql"]))
				cat, err := gen.ReadCatalog(ctx, db, tdb.dialect, []string{rl.Name, ak.Name})
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
			stmts, err := gen.DDL(s, d)
			if err != nil {
				t.Fatal(err)
			}
			execAll(t, db, stmts)
			for _, tb := range s.Tables() {
				key, ok := tb.Column("key")
				if !ok || key.Field.Type != driver.TypeString {
					continue // a table keyed by an id (apikeyRefill's keyId) has no text key to pad
				}
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

// TestDiffDatabase breaks a generated schema on each database (the
// rateLimit table loses a column and its index, the apikey table an index
// and gains a column of its own), then checks that the diff adds back
// exactly what is missing, leaves the extra column with a note, and that
// after running it the database matches.
func TestDiffDatabase(t *testing.T) {
	ctx := context.Background()
	for _, tdb := range testDBs(t) {
		t.Run(string(tdb.dialect), func(t *testing.T) {
			d := tdb.dialect
			db := tdb.open(t)
			cfg := gen.Config{Dialect: d, Naming: uniqueNaming(t, core.Naming{})}
			s, err := cfg.Schema()
			if err != nil {
				t.Fatal(err)
			}
			dropAfter(t, db, s, d)
			stmts, _ := gen.DDL(s, d)
			execAll(t, db, stmts)
			rl, _ := s.Table(core.ModelRateLimit)
			ak, _ := s.Table(core.ModelAPIKey)
			dropIndex := func(table, index string) string {
				if d == gen.MySQL {
					return "DROP INDEX " + d.Quote(index) + " ON " + d.Quote(table)
				}
				return "DROP INDEX " + d.Quote(index)
			}
			execAll(t, db, []string{
				dropIndex(rl.Name, rl.Name+"_last_request_idx"),
				"ALTER TABLE " + d.Quote(rl.Name) + " DROP COLUMN " + d.Quote("last_request"),
				dropIndex(ak.Name, ak.Name+"_reference_id_idx"),
				"ALTER TABLE " + d.Quote(ak.Name) + " ADD COLUMN " + d.Quote("legacy") + " TEXT",
			})

			plan, err := gen.DiffDB(ctx, db, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := gen.Plan{
				Statements: []string{
					"ALTER TABLE " + d.Quote(rl.Name) + " ADD COLUMN " + d.Quote("last_request") + " " + d.ColumnType(driver.Field{Type: driver.TypeInt}) + " NOT NULL DEFAULT 0",
					"CREATE INDEX " + d.Quote(rl.Name+"_last_request_idx") + " ON " + d.Quote(rl.Name) + " (" + d.Quote("last_request") + ")",
					"CREATE INDEX " + d.Quote(ak.Name+"_reference_id_idx") + " ON " + d.Quote(ak.Name) + " (" + d.Quote("reference_id") + ")",
				},
				Left: []string{"column " + ak.Name + ".legacy is not in the schema; left as it is"},
			}
			if !reflect.DeepEqual(plan, want) {
				t.Fatalf("plan:\n%s\n%s\nwant:\n%s\n%s", strings.Join(plan.Statements, "\n"), strings.Join(plan.Left, "\n"),
					strings.Join(want.Statements, "\n"), strings.Join(want.Left, "\n"))
			}
			execAll(t, db, plan.Statements)

			again, err := gen.DiffDB(ctx, db, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Statements) != 0 || !reflect.DeepEqual(again.Left, want.Left) {
				t.Errorf("after the plan ran, the diff is %q / %q; want no statements and the same note", again.Statements, again.Left)
			}
			cat, err := gen.ReadCatalog(ctx, db, d, []string{rl.Name})
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, idx := range cat[rl.Name].Indexes {
				found = found || (idx.Name == rl.Name+"_last_request_idx" && !idx.Unique && reflect.DeepEqual(idx.Columns, []string{"last_request"}))
			}
			if !found {
				t.Errorf("index on last_request not found after the plan ran: %+v", cat[rl.Name].Indexes)
			}
		})
	}
}

// TestDiffEscapesCatalogNames gives a table on each database a column and
// an index whose names hold a newline and SQL, then checks that the diff
// file runs only the plan's own statements: every name read from the
// database appears escaped on one comment line, never as a line of SQL.
func TestDiffEscapesCatalogNames(t *testing.T) {
	ctx := context.Background()
	for _, tdb := range testDBs(t) {
		t.Run(string(tdb.dialect), func(t *testing.T) {
			d := tdb.dialect
			db := tdb.open(t)
			cfg := gen.Config{Dialect: d, Naming: uniqueNaming(t, core.Naming{})}
			s, err := cfg.Schema()
			if err != nil {
				t.Fatal(err)
			}
			dropAfter(t, db, s, d)
			stmts, _ := gen.DDL(s, d)
			execAll(t, db, stmts)
			rl, _ := s.Table(core.ModelRateLimit)
			ak, _ := s.Table(core.ModelAPIKey)
			evilColumn := "c\nDROP TABLE " + ak.Name + ";\n--x"
			evilIndex := "i\r\nDROP TABLE " + ak.Name + "; --\x1b[2J"
			dropKey := "DROP INDEX " + d.Quote(rl.Name+"_key_key")
			if d == gen.MySQL {
				dropKey += " ON " + d.Quote(rl.Name)
			}
			execAll(t, db, []string{
				"ALTER TABLE " + d.Quote(rl.Name) + " ADD COLUMN " + d.Quote(evilColumn) + " TEXT",
				dropKey,
				"CREATE INDEX " + d.Quote(evilIndex) + " ON " + d.Quote(rl.Name) + " (" + d.Quote("key") + ")",
			})
			plan, err := gen.DiffDB(ctx, db, cfg)
			if err != nil {
				t.Fatal(err)
			}
			file := string(gen.DiffFile(cfg, "sync.sql", plan).Data)
			if got := scriptStatements([]byte(file)); strings.Join(got, "\n") != strings.Join(plan.Statements, "\n") {
				t.Errorf("the diff file runs %q; the plan has %q\n%s", got, plan.Statements, file)
			}
			for _, line := range strings.Split(strings.TrimSuffix(file, "\n"), "\n") {
				if strings.ContainsFunc(line, func(r rune) bool { return r < ' ' || r == 0x7f }) {
					t.Errorf("line %q holds a control character", line)
				}
				if strings.Contains(line, "DROP") && !strings.HasPrefix(line, "-- left: ") {
					t.Errorf("line %q is not a comment", line)
				}
			}
			for _, want := range []string{
				`column ` + rl.Name + `."c\nDROP TABLE ` + ak.Name + `;\n--x" is not in the schema`,
				`index "i\r\nDROP TABLE ` + ak.Name + `; --\x1b[2J" on ` + rl.Name + `.key is not unique`,
			} {
				if !strings.Contains(strings.Join(plan.Left, "\n"), want) {
					t.Errorf("no note %s in\n%s", want, strings.Join(plan.Left, "\n"))
				}
			}
		})
	}
}

// TestDiffPaddingCollation gives the rate-limit key on MySQL the
// utf8mb4_bin collation of older generated DDL, checks that the diff
// notes it with a statement that, once run, makes "k" and "k " two keys,
// and that the diff is then empty.
func TestDiffPaddingCollation(t *testing.T) {
	ctx := context.Background()
	for _, tdb := range testDBs(t) {
		if tdb.dialect != gen.MySQL {
			continue
		}
		d := tdb.dialect
		db := tdb.open(t)
		cfg := gen.Config{Dialect: d, Naming: uniqueNaming(t, core.Naming{})}
		s, err := cfg.Schema()
		if err != nil {
			t.Fatal(err)
		}
		dropAfter(t, db, s, d)
		stmts, _ := gen.DDL(s, d)
		execAll(t, db, stmts)
		rl, _ := s.Table(core.ModelRateLimit)
		execAll(t, db, []string{"ALTER TABLE " + d.Quote(rl.Name) + " MODIFY `key` VARCHAR(255) COLLATE utf8mb4_bin NOT NULL"})
		insertRow(t, db, d, rl, "key", "k", true)
		insertRow(t, db, d, rl, "key", "k ", false) // PAD SPACE: "k " is "k"

		plan, err := gen.DiffDB(ctx, db, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Statements) != 0 || len(plan.Left) != 1 || !strings.HasPrefix(plan.Left[0], "column "+rl.Name+".key has collation utf8mb4_bin,") {
			t.Fatalf("plan: %q %q", plan.Statements, plan.Left)
		}
		_, alter, _ := strings.Cut(plan.Left[0], "): ")
		execAll(t, db, []string{alter})
		insertRow(t, db, d, rl, "key", "k ", true)
		if plan, err := gen.DiffDB(ctx, db, cfg); err != nil || !plan.Empty() {
			t.Errorf("after %s the diff is %q %q (%v)", alter, plan.Statements, plan.Left, err)
		}
	}
}

// longNamings are namings whose natural index names (table_column_suffix)
// are too long for PostgreSQL's 63 characters, collide with each other or
// with a table name. prefix makes the names of one run unique on a shared
// server (PostgreSQL index names share the schema's namespace).
func longNamings(prefix string) []struct {
	name   string
	naming core.Naming
} {
	pad := func(s string, n int) string { return s + strings.Repeat("x", n-len(s)) }
	return []struct {
		name   string
		naming core.Naming
	}{
		// The old names cut to 63 characters were the table name itself.
		{"63-char tables", core.Naming{Tables: map[string]string{
			core.ModelRateLimit: pad(prefix+"_r", 63), core.ModelAPIKey: pad(prefix+"_a", 63)}}},
		// The old names were <table>_k for both apikey.configId (renamed
		// key_cfg, a plain index created first) and apikey.key.
		{"62-char tables", core.Naming{
			Tables:  map[string]string{core.ModelRateLimit: pad(prefix+"_r", 62), core.ModelAPIKey: pad(prefix+"_a", 62)},
			Columns: map[string]map[string]string{core.ModelAPIKey: {"configId": "key_cfg"}}}},
		// Short tables, long columns: configId and key share their first 60 characters.
		{"long column overrides", core.Naming{
			Tables: map[string]string{core.ModelRateLimit: prefix + "_r", core.ModelAPIKey: prefix + "_a"},
			Columns: map[string]map[string]string{
				core.ModelRateLimit: {"key": pad("k", 63), "lastRequest": pad("k", 62) + "l"},
				core.ModelAPIKey:    {"configId": pad("c", 62) + "c", "key": pad("c", 62) + "k"},
			}}},
		// <t>_x_key_key is both rate limit's key index (table <t>_x) and
		// apikey's (table <t>, key column x_key).
		{"same natural name in two tables", core.Naming{
			Tables:  map[string]string{core.ModelRateLimit: prefix + "_x", core.ModelAPIKey: prefix},
			Columns: map[string]map[string]string{core.ModelAPIKey: {"key": "x_key"}}}},
		// The rate-limit key index's natural name is the apikey table's name.
		{"index named like a table", core.Naming{
			Tables: map[string]string{core.ModelRateLimit: prefix + "_r", core.ModelAPIKey: prefix + "_r_key_key"}}},
	}
}

// TestIndexNamesOnDatabases creates the schema of every long or colliding
// naming on each database and checks that every index exists and that a
// duplicate key is refused on every unique column.
func TestIndexNamesOnDatabases(t *testing.T) {
	ctx := context.Background()
	for _, tdb := range testDBs(t) {
		d := tdb.dialect
		db := tdb.open(t)
		for _, n := range longNamings("gi" + uniqueSuffix(t)) {
			t.Run(string(d)+"/"+n.name, func(t *testing.T) {
				s, err := core.NewSchema(n.naming)
				if err != nil {
					t.Fatal(err)
				}
				dropAfter(t, db, s, d)
				stmts, err := gen.DDL(s, d)
				if err != nil {
					t.Fatal(err)
				}
				execAll(t, db, stmts)
				execAll(t, db, stmts) // idempotent
				var names []string
				for _, tb := range s.Tables() {
					names = append(names, tb.Name)
				}
				cat, err := gen.ReadCatalog(ctx, db, d, names)
				if err != nil {
					t.Fatal(err)
				}
				want := ddlIndexNames(t, stmts)
				for _, tb := range s.Tables() {
					have := cat[tb.Name]
					if have == nil {
						t.Errorf("table %s was not created", tb.Name)
						continue
					}
					for _, c := range tb.Columns {
						if !c.Field.Unique && !c.Field.Index {
							continue
						}
						var found bool
						for _, idx := range have.Indexes {
							found = found || (idx.Name == want[[2]string{tb.Name, c.Name}] &&
								len(idx.Columns) == 1 && idx.Columns[0] == c.Name && idx.Unique == c.Field.Unique)
						}
						if !found {
							t.Errorf("%s.%s has no index %s (unique: %v); the table has %+v", tb.Name, c.Name, want[[2]string{tb.Name, c.Name}], c.Field.Unique, have.Indexes)
						}
						if c.Field.Unique {
							insertRow(t, db, d, tb, c.Name, "dup", true)
							insertRow(t, db, d, tb, c.Name, "dup", false)
						}
					}
				}
				var indexed int
				for _, tb := range s.Tables() {
					for _, c := range tb.Columns {
						if c.Field.Unique || c.Field.Index {
							indexed++
						}
					}
				}
				if len(want) != indexed {
					t.Errorf("the DDL names %d indexes, the schema has %d indexed columns: %v", len(want), indexed, want)
				}
				if plan, err := gen.Diff(s, nil, d, cat); err != nil || !plan.Empty() {
					t.Errorf("diff of the schema just created: %v\n%s\n%s", err, strings.Join(plan.Statements, "\n"), strings.Join(plan.Left, "\n"))
				}
			})
		}
	}
}

// insertRow inserts a row into tb whose column col holds value, the other
// required columns a value of their type; ok says whether the insert
// must succeed or be refused (by a unique index).
func insertRow(t *testing.T, db sqlExecer, d gen.Dialect, tb *driver.Table, col, value string, ok bool) {
	t.Helper()
	var cols, ph []string
	var args []any
	for _, c := range tb.Columns {
		f := c.Field
		if f.Primary || (c.Name != col && (f.Nullable || f.Default != nil)) {
			continue
		}
		cols = append(cols, d.Quote(c.Name))
		if d == gen.Postgres {
			ph = append(ph, fmt.Sprintf("$%d", len(ph)+1))
		} else {
			ph = append(ph, "?")
		}
		switch {
		case c.Name == col && f.Type == driver.TypeInt:
			// a unique int column (apikeyRefill's keyId): the same value
			// for the same text, so a second insert of it must fail too
			args = append(args, int64(4242+len(value)))
		case c.Name == col:
			args = append(args, value)
		case f.Type == driver.TypeTime:
			args = append(args, timeArg(d, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)))
		case f.Type == driver.TypeInt:
			args = append(args, int64(0))
		case f.Type == driver.TypeBool:
			args = append(args, true)
		default:
			args = append(args, "v")
		}
	}
	q := "INSERT INTO " + d.Quote(tb.Name) + " (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(ph, ", ") + ")"
	_, err := db.ExecContext(context.Background(), q, args...)
	switch {
	case ok && err != nil:
		t.Errorf("%s: insert of %q into %s.%s: %v", d, value, tb.Name, col, err)
	case !ok && err == nil:
		t.Errorf("%s: a second row with %s.%s = %q was accepted: the unique index is missing", d, tb.Name, col, value)
	}
}

// The forms in which the DDL names an index: MySQL's KEY clauses inside
// CREATE TABLE, and every other dialect's CREATE INDEX statements.
var (
	ddlTable       = regexp.MustCompile("^CREATE TABLE (?:IF NOT EXISTS )?[`\"]([^`\"]+)[`\"]")
	ddlKeyClause   = regexp.MustCompile("(?m)^\\s*(?:UNIQUE )?KEY [`\"]([^`\"]+)[`\"] \\([`\"]([^`\"]+)[`\"]\\)")
	ddlCreateIndex = regexp.MustCompile("^CREATE (?:UNIQUE )?INDEX (?:IF NOT EXISTS )?[`\"]([^`\"]+)[`\"] ON [`\"]([^`\"]+)[`\"] \\([`\"]([^`\"]+)[`\"]\\)")
)

// ddlIndexNames reads the index names the generated DDL gives each
// indexed column, keyed by table and column: the names the server must
// then hold, since CREATE INDEX IF NOT EXISTS skips a name already taken
// without an error.
func ddlIndexNames(t *testing.T, stmts []string) map[[2]string]string {
	t.Helper()
	names := map[[2]string]string{}
	add := func(table, column, name string) {
		if old, dup := names[[2]string{table, column}]; dup {
			t.Fatalf("the DDL indexes %s.%s twice: %s and %s", table, column, old, name)
		}
		names[[2]string{table, column}] = name
	}
	for _, q := range stmts {
		if m := ddlCreateIndex.FindStringSubmatch(q); m != nil {
			add(m[2], m[3], m[1])
			continue
		}
		if m := ddlTable.FindStringSubmatch(q); m != nil {
			for _, k := range ddlKeyClause.FindAllStringSubmatch(q, -1) {
				add(m[1], k[2], k[1])
			}
		}
	}
	return names
}

// generateMap is gen.Generate as a map from file name to content.
func generateMap(t *testing.T, cfg gen.Config) map[string][]byte {
	t.Helper()
	files, err := gen.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, f := range files {
		m[f.Name] = f.Data
	}
	return m
}
