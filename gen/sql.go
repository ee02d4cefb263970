package gen

import (
	"fmt"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core"
)

// Dialect is a SQL dialect; its DDL is the SQL engine's (package ddl),
// which the engine's CreateTables runs and the generator writes.
type Dialect = ddl.Dialect

// The dialects gen writes DDL for.
const (
	Postgres = ddl.Postgres
	MySQL    = ddl.MySQL // MySQL 8 and MariaDB 10.2+ alike (older servers work, with padded keys)
	SQLite   = ddl.SQLite
)

// ParseDialect accepts "postgres", "mysql" or "sqlite".
func ParseDialect(s string) (Dialect, error) {
	d, err := ddl.ParseDialect(s)
	if err != nil {
		return "", fmt.Errorf("gen: %w", err)
	}
	return d, nil
}

// DDL returns the statements that create every table of s in the dialect.
func DDL(s *core.Schema, d Dialect) ([]string, error) {
	if _, err := ParseDialect(string(d)); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("gen: a schema is required")
	}
	names := ddl.Indexes(s.Tables())
	var stmts []string
	for _, t := range s.Tables() {
		stmts = append(stmts, d.CreateTableNamed(names, t)...)
	}
	return stmts, nil
}

// DropDDL returns the statements that drop every table of s, if they exist.
func DropDDL(s *core.Schema, d Dialect) []string {
	var stmts []string
	for _, t := range s.Tables() {
		stmts = append(stmts, "DROP TABLE IF EXISTS "+d.Quote(t.Name))
	}
	return stmts
}
