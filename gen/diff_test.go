package gen

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
)

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
			cfg := Config{Dialect: d, Naming: uniqueNaming(t, core.Naming{})}
			s, err := cfg.Schema()
			if err != nil {
				t.Fatal(err)
			}
			dropAfter(t, db, s, d)
			stmts, _ := DDL(s, d)
			exec(t, db, stmts)
			rl, _ := s.Table(core.ModelRateLimit)
			ak, _ := s.Table(core.ModelAPIKey)
			dropIndex := func(table, index string) string {
				if d == MySQL {
					return "DROP INDEX " + d.Quote(index) + " ON " + d.Quote(table)
				}
				return "DROP INDEX " + d.Quote(index)
			}
			exec(t, db, []string{
				dropIndex(rl.Name, rl.Name+"_last_request_idx"),
				"ALTER TABLE " + d.Quote(rl.Name) + " DROP COLUMN " + d.Quote("last_request"),
				dropIndex(ak.Name, ak.Name+"_reference_id_idx"),
				"ALTER TABLE " + d.Quote(ak.Name) + " ADD COLUMN " + d.Quote("legacy") + " TEXT",
			})

			plan, err := DiffDB(ctx, db, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := Plan{
				Statements: []string{
					"ALTER TABLE " + d.Quote(rl.Name) + " ADD COLUMN " + d.Quote("last_request") + " " + d.ColumnType(core.Field{Type: core.TypeInt}) + " NOT NULL DEFAULT 0",
					"CREATE INDEX " + d.Quote(rl.Name+"_last_request_idx") + " ON " + d.Quote(rl.Name) + " (" + d.Quote("last_request") + ")",
					"CREATE INDEX " + d.Quote(ak.Name+"_reference_id_idx") + " ON " + d.Quote(ak.Name) + " (" + d.Quote("reference_id") + ")",
				},
				Left: []string{"column " + ak.Name + ".legacy is not in the schema; left as it is"},
			}
			if !reflect.DeepEqual(plan, want) {
				t.Fatalf("plan:\n%s\n%s\nwant:\n%s\n%s", strings.Join(plan.Statements, "\n"), strings.Join(plan.Left, "\n"),
					strings.Join(want.Statements, "\n"), strings.Join(want.Left, "\n"))
			}
			exec(t, db, plan.Statements)

			again, err := DiffDB(ctx, db, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Statements) != 0 || !reflect.DeepEqual(again.Left, want.Left) {
				t.Errorf("after the plan ran, the diff is %q / %q; want no statements and the same note", again.Statements, again.Left)
			}
			cat, err := ReadCatalog(ctx, db, d, []string{rl.Name})
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

// TestDiffCatalog checks the plan for differences no database test
// builds: each case is a catalog and what Diff must say about it.
func TestDiffCatalog(t *testing.T) {
	s := core.MustSchema(core.Naming{})
	rl, _ := s.Table(core.ModelRateLimit)
	full := func() *ExistingTable {
		return &ExistingTable{Name: "rate_limit",
			Columns: []ExistingColumn{
				{Name: "id", Type: "INTEGER"},
				{Name: "key", Type: "TEXT"},
				{Name: "count", Type: "INTEGER", HasDefault: true},
				{Name: "last_request", Type: "INTEGER", HasDefault: true},
			},
			Indexes: []ExistingIndex{
				{Name: "rate_limit_key_key", Unique: true, Columns: []string{"key"}},
				{Name: "rate_limit_last_request_idx", Columns: []string{"last_request"}},
			}}
	}
	cases := []struct {
		name  string
		edit  func(*ExistingTable)
		stmts []string
		left  []string
	}{
		{"matching table", func(*ExistingTable) {}, nil, nil},
		{"wrong type", func(e *ExistingTable) { e.Columns[2].Type = "TEXT" },
			nil, []string{"column rate_limit.count is TEXT; the schema wants INTEGER"}},
		{"nullable where the schema says NOT NULL", func(e *ExistingTable) { e.Columns[1].Nullable = true },
			nil, []string{"column rate_limit.key accepts NULL; the schema has it NOT NULL"}},
		{"non-unique index where a unique one belongs", func(e *ExistingTable) { e.Indexes[0].Unique = false },
			nil, []string{"index rate_limit_key_key on rate_limit.key is not unique; the schema wants a unique index (check for duplicates, then replace it)"}},
		{"index name taken by another index", func(e *ExistingTable) { e.Indexes[0].Columns = []string{"count"} },
			nil, []string{"index rate_limit_key_key of table rate_limit covers (count), not (key); left as it is"}},
		{"NOT NULL column without default is added nullable", func(e *ExistingTable) {
			e.Columns = e.Columns[:1]
			e.Columns = append(e.Columns, ExistingColumn{Name: "count", Type: "INTEGER", HasDefault: true}, ExistingColumn{Name: "last_request", Type: "INTEGER", HasDefault: true})
			e.Indexes = e.Indexes[1:]
		}, []string{
			`ALTER TABLE "rate_limit" ADD COLUMN "key" TEXT`,
			`CREATE UNIQUE INDEX "rate_limit_key_key" ON "rate_limit" ("key")`,
		}, []string{"column rate_limit.key is added without NOT NULL, as existing rows have no value for it: fill it, then add the constraint"}},
		{"extra NOT NULL column without default", func(e *ExistingTable) {
			e.Columns = append(e.Columns, ExistingColumn{Name: "tenant", Type: "TEXT"})
		}, nil, []string{"column rate_limit.tenant is not in the schema and is NOT NULL without a default: inserts through sluice will fail until it gets a default or accepts NULL"}},
		{"missing primary key", func(e *ExistingTable) { e.Columns[0].Name = "pk" }, nil, []string{
			"table rate_limit has no primary-key column id; add it by hand",
			"column rate_limit.pk is not in the schema and is NOT NULL without a default: inserts through sluice will fail until it gets a default or accepts NULL",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := full()
			c.edit(e)
			plan, err := Diff(s, []*core.Table{rl}, SQLite, Catalog{"rate_limit": e})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plan.Statements, c.stmts) || !reflect.DeepEqual(plan.Left, c.left) {
				t.Errorf("got\n%q\n%q\nwant\n%q\n%q", plan.Statements, plan.Left, c.stmts, c.left)
			}
		})
	}
	t.Run("MySQL key collations", func(t *testing.T) {
		mysqlTable := func(keyCollation string) *ExistingTable {
			return &ExistingTable{Name: "rate_limit",
				Columns: []ExistingColumn{
					{Name: "id", Type: "bigint(20)"},
					{Name: "key", Type: "varchar(255)", Collation: keyCollation},
					{Name: "count", Type: "bigint(20)", HasDefault: true},
					{Name: "last_request", Type: "bigint(20)", HasDefault: true},
				},
				Indexes: full().Indexes}
		}
		for collation, note := range map[string]bool{"utf8mb4_nopad_bin": false, "utf8mb4_0900_bin": false, "": false,
			"utf8mb4_bin": true, "utf8mb4_general_ci": true, "utf8mb4_unicode_nopad_ci": true} {
			plan, err := Diff(s, []*core.Table{rl}, MySQL, Catalog{"rate_limit": mysqlTable(collation)})
			if err != nil {
				t.Fatal(err)
			}
			want := []string(nil)
			if note {
				want = []string{"column rate_limit.key has collation " + collation + ", not a binary NO PAD one: " +
					"keys differing only by trailing spaces (under a _ci collation, also by case) are one key; " +
					"the schema wants utf8mb4_nopad_bin (MariaDB 10.2.2+) or utf8mb4_0900_bin (MySQL 8.0.17+): " +
					"ALTER TABLE `rate_limit` MODIFY `key` VARCHAR(255) " + mysqlNoPad + " NOT NULL"}
			}
			if plan.Statements != nil || !reflect.DeepEqual(plan.Left, want) {
				t.Errorf("%q: got %q %q, want %q", collation, plan.Statements, plan.Left, want)
			}
		}
	})
	t.Run("missing table is created", func(t *testing.T) {
		plan, err := Diff(s, []*core.Table{rl}, SQLite, Catalog{})
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := SQLite.CreateTable(s, rl); !reflect.DeepEqual(plan.Statements, want) || plan.Left != nil {
			t.Errorf("got %q %q, want %q", plan.Statements, plan.Left, want)
		}
	})
	t.Run("unknown dialect", func(t *testing.T) {
		if _, err := Diff(s, nil, Dialect("oracle"), nil); err == nil || !strings.Contains(err.Error(), `"oracle"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("table of another schema", func(t *testing.T) {
		other, _ := core.MustSchema(core.Naming{}).Table(core.ModelRateLimit)
		if _, err := Diff(s, []*core.Table{other}, SQLite, Catalog{}); err == nil || !strings.Contains(err.Error(), "not a table of the schema") {
			t.Errorf("err = %v", err)
		}
	})
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
			cfg := Config{Dialect: d, Naming: uniqueNaming(t, core.Naming{})}
			s, err := cfg.Schema()
			if err != nil {
				t.Fatal(err)
			}
			dropAfter(t, db, s, d)
			stmts, _ := DDL(s, d)
			exec(t, db, stmts)
			rl, _ := s.Table(core.ModelRateLimit)
			ak, _ := s.Table(core.ModelAPIKey)
			evilColumn := "c\nDROP TABLE " + ak.Name + ";\n--x"
			evilIndex := "i\r\nDROP TABLE " + ak.Name + "; --\x1b[2J"
			dropKey := "DROP INDEX " + d.Quote(rl.Name+"_key_key")
			if d == MySQL {
				dropKey += " ON " + d.Quote(rl.Name)
			}
			exec(t, db, []string{
				"ALTER TABLE " + d.Quote(rl.Name) + " ADD COLUMN " + d.Quote(evilColumn) + " TEXT",
				dropKey,
				"CREATE INDEX " + d.Quote(evilIndex) + " ON " + d.Quote(rl.Name) + " (" + d.Quote("key") + ")",
			})
			plan, err := DiffDB(ctx, db, cfg)
			if err != nil {
				t.Fatal(err)
			}
			file := string(DiffFile(cfg, "sync.sql", plan).Data)
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
		if tdb.dialect != MySQL {
			continue
		}
		d := tdb.dialect
		db := tdb.open(t)
		cfg := Config{Dialect: d, Naming: uniqueNaming(t, core.Naming{})}
		s, err := cfg.Schema()
		if err != nil {
			t.Fatal(err)
		}
		dropAfter(t, db, s, d)
		stmts, _ := DDL(s, d)
		exec(t, db, stmts)
		rl, _ := s.Table(core.ModelRateLimit)
		exec(t, db, []string{"ALTER TABLE " + d.Quote(rl.Name) + " MODIFY `key` VARCHAR(255) COLLATE utf8mb4_bin NOT NULL"})
		insertRow(t, db, d, rl, "key", "k", true)
		insertRow(t, db, d, rl, "key", "k ", false) // PAD SPACE: "k " is "k"

		plan, err := DiffDB(ctx, db, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Statements) != 0 || len(plan.Left) != 1 || !strings.HasPrefix(plan.Left[0], "column "+rl.Name+".key has collation utf8mb4_bin,") {
			t.Fatalf("plan: %q %q", plan.Statements, plan.Left)
		}
		_, alter, _ := strings.Cut(plan.Left[0], "): ")
		exec(t, db, []string{alter})
		insertRow(t, db, d, rl, "key", "k ", true)
		if plan, err := DiffDB(ctx, db, cfg); err != nil || !plan.Empty() {
			t.Errorf("after %s the diff is %q %q (%v)", alter, plan.Statements, plan.Left, err)
		}
	}
}
