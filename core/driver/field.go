package driver

// FieldType is the logical type of a field. Each adapter and the generator
// map it to a column type of its dialect.
type FieldType uint8

// The field types. Integers are int64 everywhere; times are instants stored
// in UTC with millisecond precision (timestamptz on PostgreSQL, DATETIME(3) on
// MySQL, fixed-width ISO-8601 text on SQLite, see [FormatTime]).
const (
	TypeString FieldType = iota + 1
	TypeInt
	TypeBool
	TypeTime
)

var typeNames = [...]string{"", "string", "int", "bool", "time"}

// String returns "string", "int", "bool" or "time".
func (t FieldType) String() string {
	if int(t) < len(typeNames) && t != 0 {
		return typeNames[t]
	}
	return "FieldType(?)"
}

// Field describes one field of a model.
type Field struct {
	Name     string    // logical name, such as "lastRequest"
	Type     FieldType //
	Primary  bool      // the auto-incrementing integer primary key
	Nullable bool      // the column accepts NULL
	Default  any       // value used by Create when the caller gives none; nil for none
	Unique   bool      // a unique index on this column alone
	Index    bool      // a plain index on this column alone
	Size     int       // for strings: the VARCHAR length where the dialect needs one (indexed strings); 0 for unbounded text
	Comment  string    // what the field holds, for generated code
}
