// Package ddl is the DDL of sluice's tables, written once for the SQL
// engine's CreateTables and for sluicegen's files: column types, keys and
// the names of indexes in each dialect. It imports only the standard
// library and core, so the engine does not depend on the generator; the
// generator imports this package.
package ddl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-go/sluice/core/driver"
)

// Dialect is a SQL dialect, by the name sluicesql.Dialect's String gives.
type Dialect string

// The dialects DDL is written for.
const (
	Postgres Dialect = "postgres"
	MySQL    Dialect = "mysql" // MySQL 8 and MariaDB 10.2+ alike (older servers work, with padded keys)
	SQLite   Dialect = "sqlite"
)

// ParseDialect accepts "postgres", "mysql" or "sqlite".
func ParseDialect(s string) (Dialect, error) {
	switch d := Dialect(s); d {
	case Postgres, MySQL, SQLite:
		return d, nil
	}
	return "", fmt.Errorf("unknown dialect %q (want postgres, mysql or sqlite)", s)
}

// Quote quotes an identifier for the dialect: `key` on MySQL, where it is
// reserved, "key" elsewhere.
func (d Dialect) Quote(name string) string {
	if d == MySQL {
		return "`" + name + "`"
	}
	return `"` + name + `"`
}

// ColumnType is the column type of a field in the dialect.
func (d Dialect) ColumnType(f driver.Field) string {
	switch f.Type {
	case driver.TypeInt:
		if d == SQLite {
			return "INTEGER"
		}
		return "BIGINT"
	case driver.TypeBool:
		return "BOOLEAN"
	case driver.TypeTime:
		switch d {
		case Postgres:
			return "TIMESTAMPTZ(3)"
		case MySQL:
			return "DATETIME(3)"
		}
		// SQLite has no time type: the value is the text of driver.FormatTime
		// (fixed-width UTC, ordered as text). The declared type DATETIME
		// keeps that text as it is (NUMERIC affinity leaves a non-number
		// alone) and tells the drivers (modernc, mattn) to scan it into a
		// time.Time, which ORM structs need; TEXT would hand back a string.
		return "DATETIME"
	}
	if f.Size > 0 && d != SQLite {
		return fmt.Sprintf("VARCHAR(%d)", f.Size)
	}
	return "TEXT"
}

// Literal renders a default value.
func Literal(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case bool:
		if x {
			return "TRUE"
		}
		return "FALSE"
	}
	return fmt.Sprint(v)
}

// CreateTable returns the statements that create table t and its indexes,
// if they do not exist yet. The index names depend on every table of the
// schema (see [Indexes]): tables is the schema's Tables, and t must be one
// of them.
//
// On MySQL, each indexed string column is declared
// VARCHAR(255) /*!80017 COLLATE utf8mb4_0900_bin */ /*M!100202 COLLATE utf8mb4_nopad_bin */:
// MySQL 8.0.17+ and MariaDB 10.2.2+ each run their own comment and get a
// binary NO PAD collation, so the same statements serve both servers.
func (d Dialect) CreateTable(tables []*driver.Table, t *driver.Table) ([]string, error) {
	if _, err := ParseDialect(string(d)); err != nil {
		return nil, err
	}
	if t == nil || !slices.Contains(tables, t) {
		return nil, fmt.Errorf("CreateTable: the table is not one of the tables given")
	}
	return d.CreateTableNamed(Indexes(tables), t), nil
}

// CreateTableNamed is CreateTable with the schema's index names computed
// once by the caller.
func (d Dialect) CreateTableNamed(names IndexNames, t *driver.Table) []string {
	var cols []string
	for _, c := range t.Columns {
		cols = append(cols, "  "+d.ColumnDef(c))
	}
	var after []string
	for _, c := range t.Columns {
		name, unique, ok := names.Of(t, c)
		if !ok {
			continue
		}
		switch {
		case d == MySQL && unique:
			cols = append(cols, fmt.Sprintf("  UNIQUE KEY %s (%s)", d.Quote(name), d.Quote(c.Name)))
		case d == MySQL:
			cols = append(cols, fmt.Sprintf("  KEY %s (%s)", d.Quote(name), d.Quote(c.Name)))
		case unique:
			after = append(after, fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS %s ON %s (%s)", d.Quote(name), d.Quote(t.Name), d.Quote(c.Name)))
		default:
			after = append(after, fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s)", d.Quote(name), d.Quote(t.Name), d.Quote(c.Name)))
		}
	}
	create := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n%s\n)", d.Quote(t.Name), strings.Join(cols, ",\n"))
	if d == MySQL {
		// utf8mb4_bin is only the fallback of servers without a binary NO
		// PAD collation: every string column names its own (MySQLNoPad).
		create += " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
	}
	return append([]string{create}, after...)
}

// MySQLNoPad is the collation of every indexed string column (the keys
// sluice looks rows up by) on MySQL and MariaDB: binary and NO PAD, so
// that keys differing only by trailing spaces are different keys. utf8mb4_bin compares with PAD SPACE: "k" and "k " would
// share one rate-limit counter. The two servers name it differently and
// neither knows the other's name, so each gets its own in an executable
// comment: MySQL 8.0.17+ runs /*!80017 …*/ (MariaDB ignores the versions
// MySQL 5.7 and 8 use there) and MariaDB 10.2.2+ runs /*M!100202 …*/,
// which MySQL reads as a plain comment. An older server runs neither and
// keeps the table's utf8mb4_bin.
const MySQLNoPad = "/*!80017 COLLATE utf8mb4_0900_bin */ /*M!100202 COLLATE utf8mb4_nopad_bin */"

// NoPadCollations are the collations MySQLNoPad sets.
var NoPadCollations = []string{"utf8mb4_0900_bin", "utf8mb4_nopad_bin"}

// DeclaredType is the column type in DDL and ORM type tags: ColumnType,
// plus on MySQL the collation of indexed string columns. The others are
// payload, never compared, and keep the table's collation.
func (d Dialect) DeclaredType(f driver.Field) string {
	if d == MySQL && f.Type == driver.TypeString && (f.Unique || f.Index) {
		return d.ColumnType(f) + " " + MySQLNoPad
	}
	return d.ColumnType(f)
}

// ColumnDef is a column's definition in CREATE TABLE and ADD COLUMN.
func (d Dialect) ColumnDef(c driver.Column) string {
	f := c.Field
	if f.Primary {
		switch d {
		case Postgres:
			return d.Quote(c.Name) + " BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
		case MySQL:
			return d.Quote(c.Name) + " BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY"
		}
		return d.Quote(c.Name) + " INTEGER PRIMARY KEY AUTOINCREMENT"
	}
	def := d.Quote(c.Name) + " " + d.DeclaredType(f)
	if !f.Nullable {
		def += " NOT NULL"
	}
	if f.Default != nil {
		def += " DEFAULT " + Literal(f.Default)
	}
	return def
}
