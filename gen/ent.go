package gen

import (
	"fmt"
	"strings"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core/driver"
)

// entDialects are ent's dialect constants (entgo.io/ent/dialect), with the
// gen dialect whose column type each one gets.
var entDialects = []struct {
	constant string
	dialect  Dialect
}{
	{"dialect.MySQL", MySQL},
	{"dialect.Postgres", Postgres},
	{"dialect.SQLite", SQLite},
}

// entFiles writes one ent schema file per table. The schema pins the
// table name (entsql.Annotation), the column names (StorageKey), the
// column type in every dialect (SchemaType, the same as the DDL) and the
// index names, so that ent's migration and sluice's DDL describe the same
// tables.
func entFiles(cfg Config, names ddl.IndexNames, tables []*driver.Table) ([]File, error) {
	var files []File
	for _, t := range tables {
		name := goName(t.Model)
		var b strings.Builder
		b.WriteString("import (\n")
		b.WriteString("\t\"entgo.io/ent\"\n\t\"entgo.io/ent/dialect\"\n\t\"entgo.io/ent/dialect/entsql\"\n")
		b.WriteString("\t\"entgo.io/ent/schema\"\n\t\"entgo.io/ent/schema/field\"\n")
		if hasIndex(t) {
			b.WriteString("\t\"entgo.io/ent/schema/index\"\n")
		}
		b.WriteString(")\n\n")
		b.WriteString(typeDoc(name, t, "holds the ent schema of"))
		fmt.Fprintf(&b, "type %s struct {\n\tent.Schema\n}\n\n", name)
		fmt.Fprintf(&b, "// Annotations of %s: the table name.\n", name)
		fmt.Fprintf(&b, "func (%s) Annotations() []schema.Annotation {\n\treturn []schema.Annotation{entsql.Annotation{Table: %s}}\n}\n\n", name, goQuote(t.Name))
		fmt.Fprintf(&b, "// Fields of %s.\n", name)
		fmt.Fprintf(&b, "func (%s) Fields() []ent.Field {\n\treturn []ent.Field{\n", name)
		for _, c := range t.Columns {
			b.WriteString(entField(c))
		}
		b.WriteString("\t}\n}\n")
		if hasIndex(t) {
			fmt.Fprintf(&b, "\n// Indexes of %s.\n", name)
			fmt.Fprintf(&b, "func (%s) Indexes() []ent.Index {\n\treturn []ent.Index{\n", name)
			for _, c := range t.Columns {
				idx, unique, ok := names.Of(t, c)
				if !ok {
					continue
				}
				fmt.Fprintf(&b, "\t\tindex.Fields(%s)", goQuote(snakeName(c.Field.Name)))
				if unique {
					b.WriteString(".Unique()")
				}
				fmt.Fprintf(&b, ".StorageKey(%s),\n", goQuote(idx))
			}
			b.WriteString("\t}\n}\n")
		}
		f, err := goFile(cfg, goFileName(t), b.String())
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func hasIndex(t *driver.Table) bool {
	for _, c := range t.Columns {
		if ddl.HasIndex(c) {
			return true
		}
	}
	return false
}

// entField renders one field.*(...) builder expression with its trailing comma.
func entField(c driver.Column) string {
	f := c.Field
	name := snakeName(f.Name)
	var parts []string
	switch f.Type {
	case driver.TypeInt:
		parts = append(parts, fmt.Sprintf("field.Int64(%s)", goQuote(name)))
	case driver.TypeBool:
		parts = append(parts, fmt.Sprintf("field.Bool(%s)", goQuote(name)))
	case driver.TypeTime:
		parts = append(parts, fmt.Sprintf("field.Time(%s)", goQuote(name)))
	default:
		parts = append(parts, fmt.Sprintf("field.String(%s)", goQuote(name)))
		if f.Size > 0 {
			parts = append(parts, fmt.Sprintf("MaxLen(%d)", f.Size))
		}
	}
	if c.Name != name {
		parts = append(parts, fmt.Sprintf("StorageKey(%s)", goQuote(c.Name)))
	}
	// ent's bool builder has no SchemaType; its default (boolean, MySQL's
	// tinyint(1)) is what the DDL says anyway.
	if !f.Primary && f.Type != driver.TypeBool {
		var types []string
		for _, d := range entDialects {
			types = append(types, fmt.Sprintf("%s: %s", d.constant, goQuote(d.dialect.ColumnType(f))))
		}
		parts = append(parts, "SchemaType(map[string]string{\n"+strings.Join(types, ",\n")+",\n})")
	}
	if f.Nullable && !f.Primary {
		parts = append(parts, "Optional()", "Nillable()")
	}
	if f.Default != nil {
		parts = append(parts, fmt.Sprintf("Default(%s)", goLiteral(f.Default)))
	}
	if f.Comment != "" {
		parts = append(parts, fmt.Sprintf("Comment(%s)", goQuote(f.Comment)))
	}
	return "\t\t" + strings.Join(parts, ".\n\t\t\t") + ",\n"
}
