package sluicesql

import "strings"

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
	if d.valid() {
		return dialectNames[d]
	}
	return "Dialect(?)"
}

func (d Dialect) valid() bool { return d >= Postgres && d <= SQLite }

// quote quotes an identifier: "name" on PostgreSQL and SQLite, `name` on
// MySQL (where key is a reserved word). core's naming admits only letters,
// digits and underscores, so there is nothing to escape; doubling the quote
// character keeps even a foreign name harmless.
func (d Dialect) quote(name string) string {
	q := `"`
	if d == MySQL {
		q = "`"
	}
	return q + strings.ReplaceAll(name, q, q+q) + q
}

// The error classes of SQL errors, by dialect (see errors.go). Codes are
// SQLSTATEs on PostgreSQL, error numbers on MySQL, primary or extended
// result codes on SQLite.
type codeClasses struct {
	conflict, retryable, invalid []string
}

var classes = [...]codeClasses{
	Postgres: {
		conflict:  []string{"23505"},                                              // unique_violation
		retryable: []string{"40001", "40P01", "55P03"},                            // serialization_failure, deadlock_detected, lock_not_available
		invalid:   []string{"22021", "22P05", "22003", "22001", "22008", "22007"}, // bad byte sequence, untranslatable, out of range, too long, datetime overflow/format
	},
	MySQL: {
		conflict:  []string{"1062", "1586", "1022"},                         // ER_DUP_ENTRY, ER_DUP_ENTRY_WITH_KEY_NAME, ER_DUP_KEY
		retryable: []string{"1213", "1205"},                                 // deadlock victim, lock wait timeout
		invalid:   []string{"1366", "1406", "1264", "1690", "1292", "1300"}, // bad string, too long, out of range, BIGINT overflow, bad datetime, invalid character string
	},
	SQLite: {
		conflict:  []string{"2067", "1555"}, // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
		retryable: []string{"5", "6"},       // SQLITE_BUSY, SQLITE_LOCKED (primary codes)
		invalid:   []string{"18"},           // SQLITE_TOOBIG
	},
}
