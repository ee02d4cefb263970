package sluicesql

import (
	"strings"

	"github.com/sluice-go/sluice/core/driver"
)

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

// quoted quotes an identifier: "name" on PostgreSQL and SQLite, `name` on
// MySQL (where key is a reserved word). core's naming admits only letters,
// digits and underscores, so there is nothing to escape; doubling the quote
// character keeps even a foreign name harmless.
func (t *traits) quoted(name string) string {
	return t.quote + strings.ReplaceAll(name, t.quote, t.quote+t.quote) + t.quote
}

// traits are how the dialects differ where the server need not be asked,
// declared once here and read where they matter: the engine does not test
// a dialect by its name outside the probe, which turns the server's
// answers into [Features], and the error classes below.
type traits struct {
	quote        string // the identifier quote
	dollar       bool   // its placeholders are $1, $2, …
	versionQuery string // the probe's question, which the other dialects fail
	// timeLayout is how a UTC time is bound: "" for the time itself
	// (PostgreSQL); otherwise text in this layout: UTC wall-clock text for
	// MySQL, which the driver's loc cannot shift; core's fixed-width text
	// for SQLite, which has no time type, whose order is time order.
	timeLayout string

	updateReturning  bool   // UPDATE … RETURNING (on MySQL IncrementOne reads, then writes)
	onConflict       string // Create's way to answer no row for a taken key rather than abort a transaction
	noColumns        string // an INSERT of no column
	lockFirstMatch   bool   // the subquery choosing the first match locks it: PostgreSQL re-checks the guard on the locked row
	overflowToReal   bool   // an integer sum past int64 is stored as a REAL (SQLite): deltas are guarded in the statement
	deleteLimit      bool   // DELETE … ORDER BY … LIMIT, and no subquery on the table deleted from (MySQL's error 1093)
	offsetNeedsLimit bool   // OFFSET only after a LIMIT
	// lockAll says that IncrementAll is one statement: a data-modifying
	// CTE whose locking reads return the latest versions (PostgreSQL's
	// READ COMMITTED). Without it IncrementAll answers driver.ErrNoAll and
	// the caller writes in a transaction: MySQL has no data-modifying CTE,
	// SQLite no UPDATE inside WITH.
	lockAll bool

	errorAbortsTx bool // an error aborts the whole transaction (PostgreSQL): a write that may conflict runs in a savepoint
	ddlCommits    bool // DDL commits the transaction at once (MySQL): CreateTables runs one CREATE per table, outside transactions
	countsChanged bool // an UPDATE counts changed rows, not matched ones, unless the DSN sets clientFoundRows (MySQL)
	locksScanned  bool // a DELETE locks every row it scans, kept or not (MySQL's next-key locks): prunes go by primary key
	foldsNames    bool // column names compare case-insensitively (MySQL, SQLite)
	padsKeys      bool // a key's collation may ignore trailing spaces (MySQL): CheckSchema checks it
	oneWriter     bool // one writer at a time for the whole database (SQLite): NewDB's transactions take the lock at BEGIN

	catalog catalogQueries
}

// catalogQueries are a dialect's questions about a table, each a statement
// around one argument: the table's name (quoted when regclass, for
// PostgreSQL's to_regclass, which finds it on the search_path).
type catalogQueries struct {
	tableExists, columns, uniques catalogQuery // a count; the columns' names; one name per single-column unique index
	regclass                      bool
}

type catalogQuery struct{ pre, post string }

var dialects = [...]traits{
	Postgres: {
		quote: `"`, dollar: true, versionQuery: "SELECT current_setting('server_version')",
		updateReturning: true, onConflict: " ON CONFLICT DO NOTHING", noColumns: " DEFAULT VALUES",
		lockFirstMatch: true, errorAbortsTx: true, lockAll: true,
		catalog: catalogQueries{regclass: true,
			tableExists: catalogQuery{`SELECT CASE WHEN to_regclass(`, `) IS NULL THEN 0 ELSE 1 END`},
			columns:     catalogQuery{`SELECT attname AS col FROM pg_attribute WHERE attrelid = to_regclass(`, `) AND attnum > 0 AND NOT attisdropped`},
			uniques: catalogQuery{`SELECT a.attname AS col FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] WHERE i.indrelid = to_regclass(`,
				`) AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL`},
		},
	},
	MySQL: {
		quote: "`", versionQuery: "SELECT VERSION()",
		timeLayout: mysqlTimeLayout,
		noColumns:  " () VALUES ()", deleteLimit: true, offsetNeedsLimit: true,
		ddlCommits: true, countsChanged: true, locksScanned: true, foldsNames: true, padsKeys: true,
		catalog: catalogQueries{
			tableExists: catalogQuery{`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = `, ``},
			columns:     catalogQuery{`SELECT COLUMN_NAME AS col FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = `, ``},
			uniques: catalogQuery{`SELECT MIN(COLUMN_NAME) AS col FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = `,
				` AND NON_UNIQUE = 0 AND SUB_PART IS NULL GROUP BY INDEX_NAME HAVING COUNT(*) = 1`},
		},
	},
	SQLite: {
		quote: `"`, versionQuery: "SELECT sqlite_version()",
		timeLayout:      driver.TimeLayout,
		updateReturning: true, onConflict: " ON CONFLICT DO NOTHING", noColumns: " DEFAULT VALUES",
		overflowToReal: true, offsetNeedsLimit: true, foldsNames: true, oneWriter: true,
		catalog: catalogQueries{
			tableExists: catalogQuery{`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = `, ` COLLATE NOCASE`}, // as SQLite resolves names
			columns:     catalogQuery{`SELECT name AS col FROM pragma_table_info(`, `)`},
			uniques: catalogQuery{`SELECT MIN(ii.name) AS col FROM pragma_index_list(`,
				`) il, pragma_index_info(il.name) ii WHERE il."unique" = 1 AND il.partial = 0 GROUP BY il.name HAVING COUNT(*) = 1`},
		},
	},
}

// traits returns d's traits; d is valid. An engine reads them once, at
// New (engine.t): the statements it builds then ask no table.
func (d Dialect) traits() *traits { return &dialects[d] }

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
	// messages class an error by its text first: the dialect's own
	// messages, the same whatever the driver, where a code is missing or
	// shared with another class.
	messages []classText
	// primaryCodes: codes are compared by their low byte (SQLite's primary
	// result code), except the conflict codes, which are extended.
	primaryCodes bool
}

type classText struct {
	text  string
	class class
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
		messages: []classText{
			{"UNIQUE constraint failed", conflict}, {"PRIMARY KEY constraint failed", conflict},
			{"integer overflow", invalidIn}, // from the overflow guard in assignments
			{"database is locked", retryable}, {"database table is locked", retryable},
		},
		primaryCodes: true,
	},
}
