package gen

import (
	"strings"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core/driver"
)

// sqlHeader heads every generated SQL file.
func sqlHeader(cfg Config) string {
	return "-- " + strings.TrimPrefix(Header, "// ") + "\n-- " + cfg.Command() + "\n"
}

// sqlFiles writes schema.sql (every CREATE statement) and a migration pair
// whose down file drops the tables in reverse order.
func sqlFiles(cfg Config, names ddl.IndexNames, tables []*driver.Table) []File {
	var up []string
	for _, t := range tables {
		up = append(up, cfg.Dialect.CreateTableNamed(names, t)...)
	}
	var down []string
	for i := len(tables) - 1; i >= 0; i-- {
		down = append(down, "DROP TABLE IF EXISTS "+cfg.Dialect.Quote(tables[i].Name))
	}
	head := sqlHeader(cfg)
	return []File{
		{Name: "schema.sql", Data: []byte(head + "\n" + Script(up))},
		{Name: cfg.Migration + ".up.sql", Data: []byte(head + "\n" + Script(up))},
		{Name: cfg.Migration + ".down.sql", Data: []byte(head + "\n" + Script(down))},
	}
}

// Script joins statements into a SQL script: each ends with ";" and a
// blank line separates them.
func Script(stmts []string) string {
	var b strings.Builder
	for i, s := range stmts {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s)
		b.WriteString(";\n")
	}
	return b.String()
}
