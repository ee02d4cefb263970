package gen

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Plan is what brings an existing database to the schema without
// destroying anything: the statements to run, and the differences it
// leaves for a person to resolve.
type Plan struct {
	Statements []string // CREATE TABLE, ALTER TABLE … ADD COLUMN, CREATE INDEX
	Left       []string // one sentence per difference not fixed, such as a type mismatch or an extra column
}

// Empty reports whether the database already matches: nothing to run and
// nothing left.
func (p Plan) Empty() bool { return len(p.Statements) == 0 && len(p.Left) == 0 }

// Diff compares tables of s (all of them when tables is nil) with what cat
// holds and plans the missing tables, columns and indexes. It never
// drops, renames or retypes: a column of the wrong type, a missing NOT
// NULL, a non-unique index where a unique one belongs, a MySQL key column
// whose collation pads, and a column the schema does not know go into
// Left.
//
// A missing column that is NOT NULL without a default is added without
// NOT NULL (existing rows have no value for it; SQLite refuses such a
// column outright) and noted in Left: fill it, then add the constraint.
//
// Names and types in cat come from the database and may hold anything: in
// Left, each is written as it is only when it is a plain identifier (or
// type), and otherwise quoted with Go's escapes, so that no newline or
// other control character read from a database reaches a script or a
// terminal.
func Diff(s *core.Schema, tables []*driver.Table, d Dialect, cat Catalog) (Plan, error) {
	if _, err := ParseDialect(string(d)); err != nil {
		return Plan{}, err
	}
	if s == nil {
		return Plan{}, fmt.Errorf("gen: a schema is required")
	}
	all := s.Tables()
	if tables == nil {
		tables = all
	}
	for _, t := range tables {
		if !slices.Contains(all, t) {
			return Plan{}, fmt.Errorf("gen: table %s (model %q) is not a table of the schema", t.Name, t.Model)
		}
	}
	names := ddl.Indexes(all)
	var p Plan
	for _, t := range tables {
		have, ok := cat[t.Name]
		if !ok {
			p.Statements = append(p.Statements, d.CreateTableNamed(names, t)...)
			continue
		}
		p.diffTable(d, names, t, have)
	}
	return p, nil
}

// leave notes a difference the plan does not fix. Every value of args
// that comes from the database must be passed through shownName or
// shownType.
func (p *Plan) leave(format string, args ...any) {
	p.Left = append(p.Left, fmt.Sprintf(format, args...))
}

func (p *Plan) diffTable(d Dialect, names ddl.IndexNames, t *driver.Table, have *ExistingTable) {
	var indexes []string
	for _, c := range t.Columns {
		hc, ok := have.column(d, c.Name)
		if !ok {
			if c.Field.Primary {
				p.leave("table %s has no primary-key column %s; add it by hand", t.Name, c.Name)
				continue
			}
			f := c.Field
			if !f.Nullable && f.Default == nil {
				f.Nullable = true
				p.leave("column %s.%s is added without NOT NULL, as existing rows have no value for it: fill it, then add the constraint", t.Name, c.Name)
			}
			p.Statements = append(p.Statements, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s", d.Quote(t.Name), d.ColumnDef(driver.Column{Name: c.Name, Field: f})))
		} else {
			p.compareColumn(d, t, c, hc)
		}
		if stmt := p.diffIndex(d, names, t, c, have); stmt != "" {
			indexes = append(indexes, stmt)
		}
	}
	// Indexes after columns, as an index may be on a column just added.
	p.Statements = append(p.Statements, indexes...)
	for _, hc := range have.Columns {
		if _, ok := t.ColumnByName(hc.Name); ok {
			continue
		}
		if d == MySQL && slices.ContainsFunc(t.Columns, func(c driver.Column) bool { return strings.EqualFold(c.Name, hc.Name) }) {
			continue
		}
		if !hc.Nullable && !hc.HasDefault {
			p.leave("column %s.%s is not in the schema and is NOT NULL without a default: inserts through sluice will fail until it gets a default or accepts NULL", t.Name, shownName(hc.Name))
			continue
		}
		p.leave("column %s.%s is not in the schema; left as it is", t.Name, shownName(hc.Name))
	}
}

// compareColumn notes a type or nullability that differs from the schema.
func (p *Plan) compareColumn(d Dialect, t *driver.Table, c driver.Column, hc ExistingColumn) {
	want := d.ColumnType(c.Field)
	if c.Field.Primary {
		if typeFamily(d, hc.Type) != driver.TypeInt {
			p.leave("column %s.%s is %s; the primary key should be an auto-incrementing integer", t.Name, c.Name, shownType(hc.Type))
		}
		return
	}
	got := typeFamily(d, hc.Type)
	switch {
	case got != c.Field.Type:
		p.leave("column %s.%s is %s; the schema wants %s", t.Name, c.Name, shownType(hc.Type), want)
	case d == MySQL && c.Field.Type == driver.TypeTime && !strings.EqualFold(hc.Type, want):
		p.leave("column %s.%s is %s; the schema wants %s (millisecond precision)", t.Name, c.Name, shownType(hc.Type), want)
	case d == MySQL && got == driver.TypeString && c.Field.Unique && hc.Collation != "" && !slices.Contains(ddl.NoPadCollations, strings.ToLower(hc.Collation)):
		// Only the unique keys: exactness depends on them, and changing a
		// collation rebuilds the table, which is the owner's call. Going
		// to NO PAD cannot create duplicates: it tells more strings apart.
		f := c.Field
		f.Nullable = hc.Nullable
		p.leave("column %s.%s has collation %s, not a binary NO PAD one: keys differing only by trailing spaces (under a _ci collation, also by case) are one key; "+
			"the schema wants utf8mb4_nopad_bin (MariaDB 10.2.2+) or utf8mb4_0900_bin (MySQL 8.0.17+): "+
			"ALTER TABLE %s MODIFY %s", t.Name, c.Name, shownName(hc.Collation), d.Quote(t.Name), d.ColumnDef(driver.Column{Name: c.Name, Field: f}))
	}
	switch {
	case c.Field.Nullable && !hc.Nullable:
		p.leave("column %s.%s is NOT NULL; the schema allows NULL there, so writing NULL will fail", t.Name, c.Name)
	case !c.Field.Nullable && hc.Nullable:
		p.leave("column %s.%s accepts NULL; the schema has it NOT NULL", t.Name, c.Name)
	}
}

// diffIndex returns the CREATE INDEX statement for a column whose own
// index is missing, or "" when it exists or cannot be made safely.
func (p *Plan) diffIndex(d Dialect, names ddl.IndexNames, t *driver.Table, c driver.Column, have *ExistingTable) string {
	name, unique, ok := names.Of(t, c)
	if !ok {
		return ""
	}
	var same *ExistingIndex
	for i, idx := range have.Indexes {
		if len(idx.Columns) == 1 && (idx.Columns[0] == c.Name || (d == MySQL && strings.EqualFold(idx.Columns[0], c.Name))) {
			if same == nil || idx.Unique {
				same = &have.Indexes[i]
			}
		}
	}
	switch {
	case same != nil && (same.Unique || !unique):
		return ""
	case same != nil:
		p.leave("index %s on %s.%s is not unique; the schema wants a unique index (check for duplicates, then replace it)", shownName(same.Name), t.Name, c.Name)
		return ""
	}
	for _, idx := range have.Indexes {
		if strings.EqualFold(idx.Name, name) {
			cols := make([]string, len(idx.Columns))
			for i, col := range idx.Columns {
				cols[i] = shownName(col)
			}
			p.leave("index %s of table %s covers (%s), not (%s); left as it is", shownName(idx.Name), t.Name, strings.Join(cols, ", "), c.Name)
			return ""
		}
	}
	kind := "INDEX"
	if unique {
		kind = "UNIQUE INDEX"
	}
	return fmt.Sprintf("CREATE %s %s ON %s (%s)", kind, d.Quote(name), d.Quote(t.Name), d.Quote(c.Name))
}

// typeFamily maps a catalog type to the field type it can hold, or 0 for
// a type gen does not recognise.
func typeFamily(d Dialect, typ string) driver.FieldType {
	t := strings.ToLower(strings.TrimSpace(typ))
	switch {
	case d == MySQL && (strings.HasPrefix(t, "tinyint(1)") || t == "bit(1)"):
		return driver.TypeBool
	case strings.Contains(t, "bool"):
		return driver.TypeBool
	case strings.Contains(t, "int") || strings.Contains(t, "serial"):
		return driver.TypeInt
	case strings.Contains(t, "time") || strings.Contains(t, "date"):
		return driver.TypeTime
	case strings.Contains(t, "char") || strings.Contains(t, "text") || strings.Contains(t, "clob"):
		return driver.TypeString
	}
	return 0
}

// DiffDB reads the catalog of cfg's tables from db and plans what brings
// them to the schema; cfg.Dialect must be db's dialect. It only reads.
//
// On MySQL it also reads the server's version: a server without a binary
// NO PAD collation (before MariaDB 10.2.2 or MySQL 8.0.17) keeps
// utf8mb4_bin, under which keys differing only by trailing spaces share a
// row, and the plan says so in Left.
func DiffDB(ctx context.Context, db *sql.DB, cfg Config) (Plan, error) {
	cfg.Target = SQL
	s, tables, err := cfg.tables()
	if err != nil {
		return Plan{}, err
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	cat, err := ReadCatalog(ctx, db, cfg.Dialect, names)
	if err != nil {
		return Plan{}, err
	}
	plan, err := Diff(s, tables, cfg.Dialect, cat)
	if err != nil || cfg.Dialect != MySQL {
		return plan, err
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return Plan{}, fmt.Errorf("gen: reading the server version: %w", err)
	}
	if !hasNoPad(version) {
		plan.leave("server %s has no binary NO PAD collation (MariaDB 10.2.2+, MySQL 8.0.17+ have one): its tables keep utf8mb4_bin, "+
			"under which keys differing only by trailing spaces share one row", shownType(version))
	}
	return plan, nil
}

// DiffFile renders a plan as a SQL file headed like every generated file,
// the differences it leaves as comments at the top.
func DiffFile(cfg Config, name string, p Plan) File {
	cfg.Target = SQL
	var b strings.Builder
	b.WriteString(sqlHeader(cfg))
	b.WriteString("-- Brings an existing database to the schema; it never drops or changes a column.\n")
	for _, l := range p.Left {
		// Diff escapes what it read; a plan built by other hands may not.
		if hasControl(l) {
			l = strconv.QuoteToASCII(l)
		}
		b.WriteString("-- left: " + l + "\n")
	}
	if len(p.Statements) == 0 {
		b.WriteString("-- Nothing to add.\n")
	} else {
		b.WriteString("\n" + Script(p.Statements))
	}
	return File{Name: name, Data: []byte(b.String())}
}
