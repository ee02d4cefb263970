package sluicesql

// Dialect names a SQL database family. The engine learns the server's
// version and features when it opens (see [Adapter.Features]).
type Dialect uint8

// The dialects the engine speaks.
const (
	Postgres Dialect = iota + 1 // PostgreSQL (and wire-compatible servers)
	MySQL                       // MySQL and MariaDB
	SQLite                      // SQLite 3.35 or later
)

var dialectNames = [...]string{"", "postgres", "mysql", "sqlite"}

// String returns "postgres", "mysql" or "sqlite".
func (d Dialect) String() string {
	if int(d) < len(dialectNames) && d != 0 {
		return dialectNames[d]
	}
	return "Dialect(?)"
}
