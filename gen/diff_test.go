package gen

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

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
			plan, err := Diff(s, []*driver.Table{rl}, SQLite, Catalog{"rate_limit": e})
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
			plan, err := Diff(s, []*driver.Table{rl}, MySQL, Catalog{"rate_limit": mysqlTable(collation)})
			if err != nil {
				t.Fatal(err)
			}
			want := []string(nil)
			if note {
				want = []string{"column rate_limit.key has collation " + collation + ", not a binary NO PAD one: " +
					"keys differing only by trailing spaces (under a _ci collation, also by case) are one key; " +
					"the schema wants utf8mb4_nopad_bin (MariaDB 10.2.2+) or utf8mb4_0900_bin (MySQL 8.0.17+): " +
					"ALTER TABLE `rate_limit` MODIFY `key` VARCHAR(255) " + ddl.MySQLNoPad + " NOT NULL"}
			}
			if plan.Statements != nil || !reflect.DeepEqual(plan.Left, want) {
				t.Errorf("%q: got %q %q, want %q", collation, plan.Statements, plan.Left, want)
			}
		}
	})
	t.Run("missing table is created", func(t *testing.T) {
		plan, err := Diff(s, []*driver.Table{rl}, SQLite, Catalog{})
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := SQLite.CreateTable(s.Tables(), rl); !reflect.DeepEqual(plan.Statements, want) || plan.Left != nil {
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
		if _, err := Diff(s, []*driver.Table{other}, SQLite, Catalog{}); err == nil || !strings.Contains(err.Error(), "not a table of the schema") {
			t.Errorf("err = %v", err)
		}
	})
}
