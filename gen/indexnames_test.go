package gen

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// checkIndexNames checks what indexNames promises for s: every indexed
// column has a name, of at most 63 characters, that no other index and no
// table of s has, compared case-insensitively.
func checkIndexNames(t *testing.T, s *core.Schema) ddl.IndexNames {
	t.Helper()
	names := ddl.Indexes(s.Tables())
	seen := map[string]string{}
	for _, tb := range s.Tables() {
		seen[strings.ToLower(tb.Name)] = "table " + tb.Name
	}
	var indexed int
	for _, tb := range s.Tables() {
		for _, c := range tb.Columns {
			if !ddl.HasIndex(c) {
				continue
			}
			indexed++
			name := names[ddl.IndexKey{Table: tb.Name, Column: c.Name}]
			if name == "" || len(name) > ddl.MaxIdentifier {
				t.Errorf("%s.%s: index name %q is empty or longer than %d", tb.Name, c.Name, name, ddl.MaxIdentifier)
			}
			if other, dup := seen[strings.ToLower(name)]; dup {
				t.Errorf("%s.%s: index name %q is also %s", tb.Name, c.Name, name, other)
			}
			seen[strings.ToLower(name)] = "the index of " + tb.Name + "." + c.Name
		}
	}
	if len(names) != indexed {
		t.Errorf("%d names for %d indexed columns", len(names), indexed)
	}
	return names
}

// TestIndexNamesUnique checks the names for the long and colliding
// namings, and that short names stay <table>_<column>_key/_idx.
func TestIndexNamesUnique(t *testing.T) {
	for _, n := range longNamings("p") {
		t.Run(n.name, func(t *testing.T) {
			checkIndexNames(t, core.MustSchema(n.naming))
		})
	}
	names := checkIndexNames(t, core.MustSchema(core.Naming{}))
	if got := names[ddl.IndexKey{Table: "rate_limit", Column: "key"}]; got != "rate_limit_key_key" {
		t.Errorf("rate_limit.key index: %q, want rate_limit_key_key", got)
	}
	if got := names[ddl.IndexKey{Table: "apikey", Column: "reference_id"}]; got != "apikey_reference_id_idx" {
		t.Errorf("apikey.reference_id index: %q, want apikey_reference_id_idx", got)
	}
	// A 63-character table: the name is cut to 54 characters plus _ and 8 hex digits.
	long := strings.Repeat("r", 63)
	names = checkIndexNames(t, core.MustSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: long}}))
	if got := names[ddl.IndexKey{Table: long, Column: "key"}]; !regexp.MustCompile(`^r{54}_[0-9a-f]{8}$`).MatchString(got) {
		t.Errorf("index of a 63-character table: %q", got)
	}
}

// TestIndexNamesAvoidTakenHash names a table exactly what the rate-limit
// key index would be called, and checks that the index takes another name.
func TestIndexNamesAvoidTakenHash(t *testing.T) {
	long := strings.Repeat("r", 63)
	first := ddl.Indexes(core.MustSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: long}}).Tables())[ddl.IndexKey{Table: long, Column: "key"}]
	s := core.MustSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: long, core.ModelAPIKey: first}})
	names := checkIndexNames(t, s)
	if got := names[ddl.IndexKey{Table: long, Column: "key"}]; got == first || !strings.HasPrefix(got, first[:46]) {
		t.Errorf("with a table called %s the index is %s", first, got)
	}
}

// TestIndexNamesIndependentOfModels checks that generating one model
// names its indexes as generating all of them does.
func TestIndexNamesIndependentOfModels(t *testing.T) {
	naming := longNamings("p")[3].naming // apikey's key index collides with rate limit's
	all := generateMap(t, Config{Target: SQL, Dialect: Postgres, Naming: naming})
	one := generateMap(t, Config{Target: SQL, Dialect: Postgres, Naming: naming, Models: []string{core.ModelAPIKey}})
	allNames := indexNamesIn(string(all["schema.sql"]), `INDEX IF NOT EXISTS "([^"]+)"`)
	for _, name := range indexNamesIn(string(one["schema.sql"]), `INDEX IF NOT EXISTS "([^"]+)"`) {
		if !slices.Contains(allNames, name) {
			t.Errorf("index %s of apikey alone is not among %v", name, allNames)
		}
	}
}

// TestTargetsAgreeOnIndexNames checks that the DDL, the gorm and bun tags
// and the ent schema name every index alike, for every dialect and naming.
func TestTargetsAgreeOnIndexNames(t *testing.T) {
	cases := append(longNamings("p"), namings...)
	for _, n := range cases {
		for _, d := range []Dialect{Postgres, MySQL, SQLite} {
			s := core.MustSchema(n.naming)
			var want, unique []string
			for key, name := range ddl.Indexes(s.Tables()) {
				want = append(want, name)
				tb, _ := tableNamed(s, key.Table)
				if c, _ := tb.ColumnByName(key.Column); c.Field.Unique {
					unique = append(unique, name)
				}
			}
			sort.Strings(want)
			sort.Strings(unique)
			ddlPattern := `INDEX IF NOT EXISTS "([^"]+)"`
			if d == MySQL {
				ddlPattern = "KEY `([^`]+)`"
			}
			for _, c := range []struct {
				target  Target
				pattern string
				want    []string
			}{
				{SQL, ddlPattern, want},
				{Gorm, `[iI]ndex:([A-Za-z0-9_]+)`, want},
				{Bun, `unique:([A-Za-z0-9_]+)`, unique},
				{Ent, `StorageKey\("([^"]+)"\),`, want},
			} {
				files := generateMap(t, Config{Target: c.target, Dialect: d, Naming: n.naming})
				var text string
				for name, data := range files {
					if name != "0001_sluice.up.sql" && name != "0001_sluice.down.sql" {
						text += string(data)
					}
				}
				got := indexNamesIn(text, c.pattern)
				if c.target == Ent {
					got = withoutColumns(got, s)
				}
				if strings.Join(got, " ") != strings.Join(c.want, " ") {
					t.Errorf("%s/%s/%s: index names %v, want %v", n.name, c.target, d, got, c.want)
				}
			}
		}
	}
}

// indexNamesIn returns the sorted first submatches of pattern in text.
func indexNamesIn(text, pattern string) []string {
	var names []string
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	sort.Strings(names)
	return names
}

// withoutColumns drops the column names ent's StorageKey also names.
func withoutColumns(names []string, s *core.Schema) []string {
	var out []string
	for _, n := range names {
		var column bool
		for _, tb := range s.Tables() {
			_, ok := tb.ColumnByName(n)
			column = column || ok
		}
		if !column {
			out = append(out, n)
		}
	}
	return out
}

func tableNamed(s *core.Schema, name string) (*driver.Table, bool) {
	for _, tb := range s.Tables() {
		if tb.Name == name {
			return tb, true
		}
	}
	return nil, false
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
