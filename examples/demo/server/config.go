package server

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The ORMs the demo runs on.
const (
	ORMGorm = "gorm"
	ORMBun  = "bun"
	ORMEnt  = "ent"
	ORMSQL  = "sql" // plain database/sql, no ORM
	ORMPgx  = "pgx" // pgx without database/sql (PostgreSQL only)
)

// The databases the demo runs on.
const (
	DBSQLite   = "sqlite"
	DBPostgres = "postgres"
	DBMySQL    = "mysql" // MySQL and MariaDB
)

// ORMs and Databases list the accepted values of Config.ORM and Config.DB.
var (
	ORMs      = []string{ORMGorm, ORMBun, ORMEnt, ORMSQL, ORMPgx}
	Databases = []string{DBSQLite, DBPostgres, DBMySQL}
)

// Config describes a demo server. The zero value is a valid configuration:
// gorm on a fresh SQLite file in a temporary directory, rate limits kept
// in the database, the default rules and keys, and the system clock.
type Config struct {
	// ORM is "gorm" (default), "bun", "ent", "sql" (plain database/sql) or
	// "pgx" (pgx without database/sql, PostgreSQL only).
	ORM string
	// DB is "sqlite" (default), "postgres" or "mysql".
	DB string
	// DSN locates the database. For SQLite it is a file path (created if
	// missing), or a full modernc.org/sqlite DSN starting with "file:";
	// empty means a fresh file in a temporary directory that Close removes.
	// For PostgreSQL (pgx form, postgres://...) and MySQL
	// (go-sql-driver form, user@tcp(host:port)/db) it is required.
	DSN string
	// Redis, when set, is the address of a Redis server that keeps the
	// per-IP rate-limit counters (a secondary storage) instead of the
	// database. API keys stay in the database.
	Redis string
	// RedisPrefix is put before every Redis key (default "sluice-demo:").
	RedisPrefix string
	// Naming sets table and column names, as core.WithNaming does. Tests
	// use it to give every run its own tables in a shared database.
	Naming core.Naming
	// DropTables makes Close drop the tables New created (tests).
	DropTables bool
	// Logger receives a record of every rate-limit decision and API-key
	// verification: Debug when admitted, Info when denied, Error on a
	// storage error (the request then gets 503: the limiter fails closed).
	// Rate-limit keys (client IPs) appear only as a keyed hash, key_hash;
	// API keys never, only their numeric id. Default: no logging.
	Logger *slog.Logger
	// Clock is the time source of the rate limiter and the key manager
	// (default time.Now). Tests inject a clock they move by hand.
	Clock func() time.Time

	// OperatorToken is the bearer token of the operator console and API at
	// /operator/; empty: a random one, which Server.OperatorToken returns.
	OperatorToken string

	// Hello is the per-IP rule of GET /hello (default 5 per 10 s).
	Hello ratelimit.Rule
	// CreateKeys is the per-IP rule of POST /keys (default 20 per minute).
	CreateKeys ratelimit.Rule
	// Key is the default of new keys; a request's body overrides it
	// field by field. Zero fields take the defaults: quota 5, refilled to 5
	// every minute, at most 3 requests per 10 s.
	Key KeyDefaults
}

// KeyDefaults are the properties of a key created with an empty body.
type KeyDefaults struct {
	Quota          int64         // units a key starts with
	RefillInterval time.Duration // how often the quota is restored
	RefillAmount   int64         // what the quota is restored to
	RateMax        int64         // requests per RateWindow
	RateWindow     time.Duration
}

// KeyPrefix starts every key the demo creates, to make them recognisable.
const KeyPrefix = "sk_demo_"

// withDefaults fills the zero fields and checks the rest, so that a bad
// configuration fails before any connection is opened.
func (c Config) withDefaults() (Config, error) {
	c.ORM = strings.ToLower(strings.TrimSpace(c.ORM))
	c.DB = strings.ToLower(strings.TrimSpace(c.DB))
	if c.ORM == "" {
		c.ORM = ORMGorm
	}
	if c.DB == "" {
		c.DB = DBSQLite
	}
	if c.DB == "postgresql" || c.DB == "pg" {
		c.DB = DBPostgres
	}
	if c.DB == "mariadb" {
		c.DB = DBMySQL
	}
	var errs []error
	if !slices.Contains(ORMs, c.ORM) {
		errs = append(errs, fmt.Errorf("unknown ORM %q (want one of %s)", c.ORM, strings.Join(ORMs, ", ")))
	}
	if !slices.Contains(Databases, c.DB) {
		errs = append(errs, fmt.Errorf("unknown database %q (want one of %s)", c.DB, strings.Join(Databases, ", ")))
	}
	if c.ORM == ORMPgx && c.DB != DBPostgres && slices.Contains(Databases, c.DB) {
		errs = append(errs, fmt.Errorf("ORM pgx runs on PostgreSQL only, not %s (use -db postgres)", c.DB))
	}
	if c.DB != DBSQLite && c.DSN == "" && slices.Contains(Databases, c.DB) {
		errs = append(errs, fmt.Errorf("database %s needs a DSN (flag -dsn)", c.DB))
	}
	if c.DB == DBMySQL && c.DSN != "" {
		if err := checkMySQLDSN(c.DSN); err != nil {
			errs = append(errs, err)
		}
	}
	if c.RedisPrefix == "" {
		c.RedisPrefix = "sluice-demo:"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Hello == (ratelimit.Rule{}) {
		c.Hello = ratelimit.Rule{Window: 10 * time.Second, Max: 5}
	}
	if c.CreateKeys == (ratelimit.Rule{}) {
		c.CreateKeys = ratelimit.Rule{Window: time.Minute, Max: 20}
	}
	for name, r := range map[string]ratelimit.Rule{"Hello": c.Hello, "CreateKeys": c.CreateKeys} {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("rule %s: %w", name, err))
		}
	}
	k := &c.Key
	if k.Quota == 0 {
		k.Quota = 5
	}
	if k.RefillInterval == 0 {
		k.RefillInterval = time.Minute
	}
	if k.RefillAmount == 0 {
		k.RefillAmount = k.Quota
	}
	if k.RateMax == 0 {
		k.RateMax = 3
	}
	if k.RateWindow == 0 {
		k.RateWindow = 10 * time.Second
	}
	if k.Quota < 0 || k.RefillAmount < 0 || k.RateMax < 0 || k.RefillInterval < 0 || k.RateWindow < 0 {
		errs = append(errs, fmt.Errorf("key defaults must not be negative: %+v", *k))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("%w: demo config: %w", core.ErrInvalid, err)
	}
	return c, nil
}

// urlScheme matches the start of a URL ("mysql://", "mariadb://"), which
// go-sql-driver/mysql does not read: it would take "mysql" for a user name.
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// checkMySQLDSN catches the common mistake of a URL where go-sql-driver
// wants its own form, before a connection is tried, and says which form is
// wanted. The DSN itself is not repeated: it may hold a password.
func checkMySQLDSN(dsn string) error {
	const want = "the MySQL DSN must be in go-sql-driver/mysql form user:pass@tcp(host:port)/db, such as root@tcp(127.0.0.1:3306)/test"
	if m := urlScheme.FindString(dsn); m != "" {
		return fmt.Errorf("%s, not a URL (it starts with %q)", want, m)
	}
	if _, err := mysql.ParseDSN(dsn); err != nil {
		return fmt.Errorf("%s: %w", want, err)
	}
	return nil
}
