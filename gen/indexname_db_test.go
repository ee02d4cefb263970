package gen

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
)

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
				stmts, err := DDL(s, d)
				if err != nil {
					t.Fatal(err)
				}
				exec(t, db, stmts)
				exec(t, db, stmts) // idempotent
				var names []string
				for _, tb := range s.Tables() {
					names = append(names, tb.Name)
				}
				cat, err := ReadCatalog(ctx, db, d, names)
				if err != nil {
					t.Fatal(err)
				}
				want := indexNames(s)
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
							found = found || (idx.Name == want[indexKey{tb.Name, c.Name}] &&
								len(idx.Columns) == 1 && idx.Columns[0] == c.Name && idx.Unique == c.Field.Unique)
						}
						if !found {
							t.Errorf("%s.%s has no index %s (unique: %v); the table has %+v", tb.Name, c.Name, want[indexKey{tb.Name, c.Name}], c.Field.Unique, have.Indexes)
						}
						if c.Field.Unique {
							insertRow(t, db, d, tb, c.Name, "dup", true)
							insertRow(t, db, d, tb, c.Name, "dup", false)
						}
					}
				}
				if plan, err := Diff(s, nil, d, cat); err != nil || !plan.Empty() {
					t.Errorf("diff of the schema just created: %v\n%s\n%s", err, strings.Join(plan.Statements, "\n"), strings.Join(plan.Left, "\n"))
				}
			})
		}
	}
}

// insertRow inserts a row into tb whose column col holds value, the other
// required columns a value of their type; ok says whether the insert
// must succeed or be refused (by a unique index).
func insertRow(t *testing.T, db sqlExecer, d Dialect, tb *core.Table, col, value string, ok bool) {
	t.Helper()
	var cols, ph []string
	var args []any
	for _, c := range tb.Columns {
		f := c.Field
		if f.Primary || (c.Name != col && (f.Nullable || f.Default != nil)) {
			continue
		}
		cols = append(cols, d.Quote(c.Name))
		if d == Postgres {
			ph = append(ph, fmt.Sprintf("$%d", len(ph)+1))
		} else {
			ph = append(ph, "?")
		}
		switch {
		case c.Name == col:
			args = append(args, value)
		case f.Type == core.TypeTime:
			args = append(args, timeArg(d, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)))
		case f.Type == core.TypeInt:
			args = append(args, int64(0))
		case f.Type == core.TypeBool:
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
