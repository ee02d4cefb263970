package gen

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-go/sluice/core"
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

// Diff compares tables with what cat holds and plans the missing tables,
// columns and indexes. It never drops, renames or retypes: a column of the
// wrong type, a missing NOT NULL, a non-unique index where a unique one
// belongs and a column the schema does not know go into Left.
//
// A missing column that is NOT NULL without a default is added without
// NOT NULL (existing rows have no value for it; SQLite refuses such a
// column outright) and noted in Left: fill it, then add the constraint.
func Diff(tables []*core.Table, d Dialect, cat Catalog) (Plan, error) {
	if _, err := ParseDialect(string(d)); err != nil {
		return Plan{}, err
	}
	var p Plan
	for _, t := range tables {
		have, ok := cat[t.Name]
		if !ok {
			p.Statements = append(p.Statements, d.CreateTable(t)...)
			continue
		}
		p.diffTable(d, t, have)
	}
	return p, nil
}

func (p *Plan) leave(format string, args ...any) {
	p.Left = append(p.Left, fmt.Sprintf(format, args...))
}

func (p *Plan) diffTable(d Dialect, t *core.Table, have *ExistingTable) {
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
			p.Statements = append(p.Statements, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s", d.Quote(t.Name), d.columnDef(core.Column{Name: c.Name, Field: f})))
		} else {
			p.compareColumn(d, t, c, hc)
		}
		if stmt := p.diffIndex(d, t, c, have); stmt != "" {
			indexes = append(indexes, stmt)
		}
	}
	// Indexes after columns, as an index may be on a column just added.
	p.Statements = append(p.Statements, indexes...)
	for _, hc := range have.Columns {
		if _, ok := t.ColumnByName(hc.Name); ok {
			continue
		}
		if d == MySQL && slices.ContainsFunc(t.Columns, func(c core.Column) bool { return strings.EqualFold(c.Name, hc.Name) }) {
			continue
		}
		if !hc.Nullable && !hc.HasDefault {
			p.leave("column %s.%s is not in the schema and is NOT NULL without a default: inserts through sluice will fail until it gets a default or accepts NULL", t.Name, hc.Name)
			continue
		}
		p.leave("column %s.%s is not in the schema; left as it is", t.Name, hc.Name)
	}
}

// compareColumn notes a type or nullability that differs from the schema.
func (p *Plan) compareColumn(d Dialect, t *core.Table, c core.Column, hc ExistingColumn) {
	want := d.ColumnType(c.Field)
	if c.Field.Primary {
		if typeFamily(d, hc.Type) != core.TypeInt {
			p.leave("column %s.%s is %s; the primary key should be an auto-incrementing integer", t.Name, c.Name, hc.Type)
		}
		return
	}
	got := typeFamily(d, hc.Type)
	switch {
	case got != c.Field.Type:
		p.leave("column %s.%s is %s; the schema wants %s", t.Name, c.Name, hc.Type, want)
	case d == MySQL && c.Field.Type == core.TypeTime && !strings.EqualFold(hc.Type, want):
		p.leave("column %s.%s is %s; the schema wants %s (millisecond precision)", t.Name, c.Name, hc.Type, want)
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
func (p *Plan) diffIndex(d Dialect, t *core.Table, c core.Column, have *ExistingTable) string {
	name, unique, ok := indexOf(t, c)
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
		p.leave("index %s on %s.%s is not unique; the schema wants a unique index (check for duplicates, then replace it)", same.Name, t.Name, c.Name)
		return ""
	}
	for _, idx := range have.Indexes {
		if strings.EqualFold(idx.Name, name) {
			p.leave("index %s of table %s covers (%s), not (%s); left as it is", idx.Name, t.Name, strings.Join(idx.Columns, ", "), c.Name)
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
func typeFamily(d Dialect, typ string) core.FieldType {
	t := strings.ToLower(strings.TrimSpace(typ))
	switch {
	case d == MySQL && (strings.HasPrefix(t, "tinyint(1)") || t == "bit(1)"):
		return core.TypeBool
	case strings.Contains(t, "bool"):
		return core.TypeBool
	case strings.Contains(t, "int") || strings.Contains(t, "serial"):
		return core.TypeInt
	case strings.Contains(t, "time") || strings.Contains(t, "date"):
		return core.TypeTime
	case strings.Contains(t, "char") || strings.Contains(t, "text") || strings.Contains(t, "clob"):
		return core.TypeString
	}
	return 0
}

// DiffDB reads the catalog of cfg's tables from db and plans what brings
// them to the schema; cfg.Dialect must be db's dialect. It only reads.
func DiffDB(ctx context.Context, db *sql.DB, cfg Config) (Plan, error) {
	cfg.Target = SQL
	tables, err := cfg.tables()
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
	return Diff(tables, cfg.Dialect, cat)
}

// DiffFile renders a plan as a SQL file headed like every generated file,
// the differences it leaves as comments at the top.
func DiffFile(cfg Config, name string, p Plan) File {
	cfg.Target = SQL
	var b strings.Builder
	b.WriteString(sqlHeader(cfg))
	b.WriteString("-- Brings an existing database to the schema; it never drops or changes a column.\n")
	for _, l := range p.Left {
		b.WriteString("-- left: " + l + "\n")
	}
	if len(p.Statements) == 0 {
		b.WriteString("-- Nothing to add.\n")
	} else {
		b.WriteString("\n" + Script(p.Statements))
	}
	return File{Name: name, Data: []byte(b.String())}
}
