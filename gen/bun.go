package gen

import (
	"fmt"
	"strings"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core/driver"
)

// bunFiles writes one bun model struct per table.
func bunFiles(cfg Config, names ddl.IndexNames, tables []*driver.Table) ([]File, error) {
	var files []File
	for _, t := range tables {
		name := goName(t.Model)
		var b strings.Builder
		b.WriteString("import (\n")
		if usesTime([]*driver.Table{t}) {
			b.WriteString("\t\"time\"\n\n")
		}
		b.WriteString("\t\"github.com/uptrace/bun\"\n)\n\n")
		b.WriteString(typeDoc(name, t, "is a row of"))
		fmt.Fprintf(&b, "type %s struct {\n", name)
		fmt.Fprintf(&b, "\tbun.BaseModel `bun:%s`\n\n", goQuote("table:"+t.Name))
		for _, c := range t.Columns {
			b.WriteString(lineComment("\t", fieldComment(c.Field, "bun")))
			fmt.Fprintf(&b, "\t%s %s `bun:%s`\n", goName(c.Field.Name), goType(c.Field), goQuote(bunTag(cfg.Dialect, names, t, c)))
		}
		b.WriteString("}\n")
		f, err := goFile(cfg, goFileName(t), b.String())
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// bunTag is the bun struct tag of a column. Every column names its type,
// because bun's own choice for time.Time on MySQL is DATETIME without
// fractional seconds. A unique column names its constraint, which is the
// DDL's unique index (bun's CREATE TABLE makes no plain indexes).
func bunTag(d Dialect, names ddl.IndexNames, t *driver.Table, c driver.Column) string {
	f := c.Field
	parts := []string{c.Name}
	if f.Primary {
		return strings.Join(append(parts, "pk", "autoincrement"), ",")
	}
	if f.Nullable {
		parts = append(parts, "nullzero")
	} else {
		parts = append(parts, "notnull")
	}
	if idx, unique, ok := names.Of(t, c); ok && unique {
		parts = append(parts, "unique:"+idx)
	}
	if def, ok := ormDefault(f); ok {
		parts = append(parts, "default:"+def)
	}
	parts = append(parts, "type:"+d.DeclaredType(f))
	return strings.Join(parts, ",")
}
