package driver

// Column is one field of a [Table] with its physical name.
type Column struct {
	Name  string // physical column name
	Field Field  // logical description
}

// Table is a model resolved to physical names. Adapters receive it with every
// call; it is immutable and safe to share.
type Table struct {
	Name    string   // physical table name
	Model   string   // logical model name
	Columns []Column // in model order; Columns[0] is the primary key
	Comment string
	// Optional is the model's Optional: a database may lack the table.
	Optional bool

	byField  map[string]int
	byColumn map[string]int
}

// NewTable returns t ready for use: its columns indexed by field and by
// name. core.Schema makes every table an adapter receives; adapters and
// tests need NewTable only for tables of their own.
func NewTable(t Table) *Table {
	t.byField = make(map[string]int, len(t.Columns))
	t.byColumn = make(map[string]int, len(t.Columns))
	for i, c := range t.Columns {
		t.byField[c.Field.Name] = i
		t.byColumn[c.Name] = i
	}
	return &t
}

// Column returns the column of a logical field.
func (t *Table) Column(field string) (Column, bool) {
	i, ok := t.byField[field]
	if !ok {
		return Column{}, false
	}
	return t.Columns[i], true
}

// ColumnByName returns the column with a physical name.
func (t *Table) ColumnByName(name string) (Column, bool) {
	i, ok := t.byColumn[name]
	if !ok {
		return Column{}, false
	}
	return t.Columns[i], true
}

// PrimaryKey returns the primary-key column.
func (t *Table) PrimaryKey() Column { return t.Columns[0] }

// SelectsOne reports whether where pins at most one row by itself: an equality with a non-nil value
// on the primary key or a unique column. Such a guard needs no "first
// matching row" subquery to change at most one row.
func (t *Table) SelectsOne(where []Where) bool {
	for _, w := range where {
		if w.Op != OpEq || w.Value == nil {
			continue
		}
		if i, ok := t.byColumn[w.Column]; ok && (t.Columns[i].Field.Primary || t.Columns[i].Field.Unique) {
			return true
		}
	}
	return false
}

// ColumnNames returns the physical column names in model order.
func (t *Table) ColumnNames() []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}
