package core

// Rows is what a SQL adapter reads records from: a *sql.Rows, or any
// driver's rows with the same methods (ent's sql.Rows embeds one).
type Rows interface {
	Columns() ([]string, error)
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanRecords reads every remaining row into a record keyed by column name,
// each value as the driver produced it ([DB] converts them). Scanning into
// *any copies driver-owned []byte, so the records stay valid after the rows
// move on. It does not close rows.
func ScanRecords(rows Rows) ([]Record, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []Record
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		rec := make(Record, len(cols))
		for i, c := range cols {
			rec[c] = vals[i]
			vals[i] = nil // a NULL in the next row must not inherit this value
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}
