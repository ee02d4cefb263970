package gen

import (
	"fmt"
	"strings"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core/driver"
)

// gormFiles writes one gorm model struct per table.
func gormFiles(cfg Config, names ddl.IndexNames, tables []*driver.Table) ([]File, error) {
	var files []File
	for _, t := range tables {
		name := goName(t.Model)
		var b strings.Builder
		if usesTime([]*driver.Table{t}) {
			b.WriteString("import \"time\"\n\n")
		}
		b.WriteString(typeDoc(name, t, "is a row of"))
		fmt.Fprintf(&b, "type %s struct {\n", name)
		for _, c := range t.Columns {
			b.WriteString(lineComment("\t", fieldComment(c.Field, "gorm")))
			fmt.Fprintf(&b, "\t%s %s `gorm:%s`\n", goName(c.Field.Name), goType(c.Field), goQuote(gormTag(cfg.Dialect, names, t, c)))
		}
		b.WriteString("}\n\n")
		fmt.Fprintf(&b, "// TableName is the table gorm reads and writes %s rows in.\n", name)
		fmt.Fprintf(&b, "func (%s) TableName() string { return %s }\n", name, goQuote(t.Name))
		f, err := goFile(cfg, goFileName(t), b.String())
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// gormTag is the gorm struct tag of a column.
func gormTag(d Dialect, names ddl.IndexNames, t *driver.Table, c driver.Column) string {
	f := c.Field
	parts := []string{"column:" + c.Name}
	if f.Primary {
		return strings.Join(append(parts, "primaryKey", "autoIncrement"), ";")
	}
	parts = append(parts, "type:"+d.DeclaredType(f))
	if !f.Nullable {
		parts = append(parts, "not null")
	}
	if def, ok := ormDefault(f); ok {
		parts = append(parts, "default:"+def)
	}
	if idx, unique, ok := names.Of(t, c); ok {
		kind := "index"
		if unique {
			kind = "uniqueIndex"
		}
		parts = append(parts, kind+":"+idx)
	}
	return strings.Join(parts, ";")
}
