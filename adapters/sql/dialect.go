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
// SQLSTATEs on PostgreSQL, error numbers on MySQL, primary result codes on
// SQLite. unavailableText are messages, without a code, of a driver of the
// dialect whose connection broke.
type codeClasses struct {
	conflict, retryable, invalid, unavailable, auth, foreign []string
	unavailableText                                          []string
	// createRace: a CREATE that lost the race to another session creating
	// the same table or index (see lostRace).
	createRace     []string
	createRaceText string
}

var classes = [...]codeClasses{
	Postgres: {
		conflict:  []string{"23505"},                                              // unique_violation
		retryable: []string{"40001", "40P01", "55P03"},                            // serialization_failure, deadlock_detected, lock_not_available
		invalid:   []string{"22021", "22P05", "22003", "22001", "22008", "22007"}, // bad byte sequence, untranslatable, out of range, too long, datetime overflow/format
		// connection_exception and its subclasses, admin/crash shutdown,
		// cannot_connect_now (starting up, or a standby), too_many_connections
		unavailable: []string{"08000", "08001", "08003", "08004", "08006", "08P01", "57P01", "57P02", "57P03", "53300"},
		auth:        []string{"28000", "28P01"}, // invalid_authorization_specification (no such role, pg_hba), invalid_password
		// duplicate_table, duplicate_object, or the duplicate key in its
		// catalog that a CREATE waiting on another's uncommitted table gets
		createRace: []string{"42P07", "42710", "23505"},
	},
	MySQL: {
		conflict:  []string{"1062", "1586", "1022"},                         // ER_DUP_ENTRY, ER_DUP_ENTRY_WITH_KEY_NAME, ER_DUP_KEY
		retryable: []string{"1213", "1205"},                                 // deadlock victim, lock wait timeout
		invalid:   []string{"1366", "1406", "1264", "1690", "1292", "1300"}, // bad string, too long, out of range, BIGINT overflow, bad datetime, invalid character string
		// Galera's "WSREP has not yet prepared node for application use" and
		// "not connected to Primary Component" (during COMMIT), too many
		// connections (server-wide, per user), server shutdown in progress
		unavailable: []string{"1047", "1180", "1040", "1203", "1053"},
		// access denied (user or password; to the database; by the socket
		// plugin), host not allowed, password expired
		auth:            []string{"1045", "1044", "1698", "1130", "1862", "1820"},
		unavailableText: []string{"invalid connection", "bad connection"}, // go-sql-driver/mysql's ErrInvalidConn, database/sql's ErrBadConn
		createRace:      []string{"1050", "1061"},                         // table exists, duplicate key name
	},
	SQLite: {
		conflict:       []string{"2067", "1555"}, // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
		retryable:      []string{"5", "6"},       // SQLITE_BUSY, SQLITE_LOCKED (primary codes)
		invalid:        []string{"18"},           // SQLITE_TOOBIG
		unavailable:    []string{"14", "10"},     // SQLITE_CANTOPEN, SQLITE_IOERR
		auth:           []string{"23"},           // SQLITE_AUTH
		foreign:        []string{"26"},           // SQLITE_NOTADB: the file is not an SQLite database
		createRaceText: "already exists",
	},
}
