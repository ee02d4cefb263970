package gen

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Catalog is what a database holds of the tables gen knows, keyed by
// table name; a table that does not exist is absent.
type Catalog map[string]*ExistingTable

// ExistingTable is a table as the database describes it.
type ExistingTable struct {
	Name    string
	Columns []ExistingColumn // in table order
	Indexes []ExistingIndex  // sorted by name, including those behind UNIQUE constraints
}

// ExistingColumn is a column as the database describes it.
type ExistingColumn struct {
	Name       string
	Type       string // as the catalog spells it: "bigint", "varchar(255)", "DATETIME"
	Nullable   bool
	HasDefault bool
	Collation  string // MySQL's collation of a string column, such as "utf8mb4_nopad_bin"; "" elsewhere
}

// ExistingIndex is an index as the database describes it.
type ExistingIndex struct {
	Name    string
	Unique  bool
	Columns []string // in key order
}

// column returns the existing column with a name: exactly, or on MySQL
// (whose column names ignore case) case-insensitively.
func (t *ExistingTable) column(d Dialect, name string) (ExistingColumn, bool) {
	for _, c := range t.Columns {
		if c.Name == name || (d == MySQL && strings.EqualFold(c.Name, name)) {
			return c, true
		}
	}
	return ExistingColumn{}, false
}

// ReadCatalog reads the columns and indexes of tables from db: through
// information_schema on MySQL and on PostgreSQL (pg_catalog for indexes,
// which information_schema does not list), in the current schema or
// database; through pragma table_info and index_list on SQLite. It only
// reads.
func ReadCatalog(ctx context.Context, db *sql.DB, d Dialect, tables []string) (Catalog, error) {
	if _, err := ParseDialect(string(d)); err != nil {
		return nil, err
	}
	cat := Catalog{}
	for _, name := range tables {
		t, err := readTable(ctx, db, d, name)
		if err != nil {
			return nil, fmt.Errorf("gen: reading table %s: %w", name, err)
		}
		if t != nil {
			cat[name] = t
		}
	}
	return cat, nil
}

// The catalog queries, one table at a time. Each column query returns
// name, type, nullable (bool), has-default (bool), collation (or NULL).
const (
	pgColumns = `SELECT column_name, data_type, is_nullable = 'YES', column_default IS NOT NULL, NULL
FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`
	pgIndexes = `SELECT i.relname, ix.indisunique, a.attname
FROM pg_catalog.pg_class t
JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
JOIN pg_catalog.pg_index ix ON ix.indrelid = t.oid
JOIN pg_catalog.pg_class i ON i.oid = ix.indexrelid
JOIN LATERAL unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) ON true
JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
WHERE n.nspname = current_schema() AND t.relname = $1
ORDER BY i.relname, k.ord`
	mysqlColumns = `SELECT column_name, column_type, is_nullable = 'YES', column_default IS NOT NULL, collation_name
FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position`
	mysqlIndexes = `SELECT index_name, non_unique = 0, column_name
FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ?
ORDER BY index_name, seq_in_index`
	sqliteColumns = `SELECT name, type, "notnull" = 0 AND pk = 0, dflt_value IS NOT NULL, NULL FROM pragma_table_info(?) ORDER BY cid`
	sqliteIndexes = `SELECT l.name, l."unique", i.name
FROM pragma_index_list(?) AS l, pragma_index_info(l.name) AS i
ORDER BY l.name, i.seqno`
)

func readTable(ctx context.Context, db *sql.DB, d Dialect, name string) (*ExistingTable, error) {
	colQ, idxQ := pgColumns, pgIndexes
	switch d {
	case MySQL:
		colQ, idxQ = mysqlColumns, mysqlIndexes
	case SQLite:
		colQ, idxQ = sqliteColumns, sqliteIndexes
	}
	t := &ExistingTable{Name: name}
	rows, err := db.QueryContext(ctx, colQ, name)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var c ExistingColumn
		var collation sql.NullString
		if err := rows.Scan(&c.Name, &c.Type, &c.Nullable, &c.HasDefault, &collation); err != nil {
			rows.Close()
			return nil, err
		}
		c.Collation = collation.String
		t.Columns = append(t.Columns, c)
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}
	if len(t.Columns) == 0 {
		return nil, nil // every table has a column: none means no table
	}
	rows, err = db.QueryContext(ctx, idxQ, name)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var idx, col string
		var unique bool
		if err := rows.Scan(&idx, &unique, &col); err != nil {
			rows.Close()
			return nil, err
		}
		if n := len(t.Indexes); n > 0 && t.Indexes[n-1].Name == idx {
			t.Indexes[n-1].Columns = append(t.Indexes[n-1].Columns, col)
			continue
		}
		t.Indexes = append(t.Indexes, ExistingIndex{Name: idx, Unique: unique, Columns: []string{col}})
	}
	return t, closeRows(rows)
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}
