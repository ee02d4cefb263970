package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	_ "github.com/go-sql-driver/mysql" // registers "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
)

// sqliteOptions are the DSN parameters every sluice SQL adapter documents
// for concurrent writers on modernc.org/sqlite.
const sqliteOptions = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"

// sqlEnv is one SQL database prepared for a run: a counted pool, the two
// tables under names of this run, and the seeded keys.
type sqlEnv struct {
	name    string
	dialect gen.Dialect
	pool    *sql.DB
	pgx     *pgxpool.Pool // the pgx adapter's own pool, on PostgreSQL
	dsn     string        // the pool's DSN, for the pgx adapter's own pool
	conns   int
	rt      atomic.Int64
	schema  *core.Schema
	rl, ak  *driver.Table
	cleanup []func()

	// physical, quoted names of the rateLimit table and columns
	rlName, cKey, cCount, cLast string
	// of the apikey table
	akName, cID, cName, cRequests string

	seededAt int64    // epoch ms of every seeded window
	ukeys    []string // the uniform scenario's rate-limit keys
	apiKeys  apiKeySet
	burstSeq atomic.Int64
}

// apiKeySet holds the plaintext API keys of each scenario.
type apiKeySet struct {
	hot, deny string
	uniform   []string
}

func placeholderStyle(d gen.Dialect, q string) string {
	if d != gen.Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sql renders q, written with '?' placeholders, for the dialect.
func (e *sqlEnv) sql(q string) string { return placeholderStyle(e.dialect, q) }

// openSQL opens and prepares a database: name is postgres, mysql or sqlite.
func openSQL(ctx context.Context, name, dsn string, cfg config, runID string) (e *sqlEnv, err error) {
	e = &sqlEnv{name: name}
	defer func() {
		if err != nil {
			e.close()
			e = nil
		}
	}()
	var driverName string
	conns := cfg.conns
	switch name {
	case "postgres":
		e.dialect, driverName = gen.Postgres, "pgx"
		conns = min(conns, mainPoolConnsPG) // beside pgx's pool
		if cfg.asyncCommit {
			// pgx sends unknown DSN parameters as run-time parameters: this
			// session setting touches no one else's connections.
			dsn = withParam(dsn, "synchronous_commit=off")
		}
	case "mysql":
		e.dialect, driverName = gen.MySQL, "mysql"
	case "sqlite":
		e.dialect, driverName = gen.SQLite, "sqlite"
		dir, err := os.MkdirTemp("", "sluicebench-*")
		if err != nil {
			return nil, err
		}
		e.cleanup = append(e.cleanup, func() { os.RemoveAll(dir) })
		dsn = "file:" + filepath.Join(dir, "bench.db") + sqliteOptions
		if cfg.asyncCommit {
			dsn += "&_pragma=synchronous(normal)"
		}
		conns = cfg.sqliteConns
	default:
		return nil, fmt.Errorf("unknown database %q", name)
	}
	e.dsn, e.conns = dsn, conns
	if e.pool, err = openCounted(driverName, dsn, &e.rt); err != nil {
		return nil, err
	}
	e.cleanup = append(e.cleanup, func() { e.pool.Close() })
	e.pool.SetMaxOpenConns(conns)
	e.pool.SetMaxIdleConns(conns)
	if err := e.pool.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}

	naming := core.Naming{Tables: map[string]string{
		core.ModelRateLimit:    "sluicebench_rl_" + runID,
		core.ModelAPIKey:       "sluicebench_ak_" + runID,
		core.ModelRerolledKey:  "sluicebench_rk_" + runID,
		core.ModelAPIKeyLimit:  "sluicebench_kl_" + runID,
		core.ModelAPIKeyRefill: "sluicebench_kr_" + runID,
	}}
	if e.schema, err = core.NewSchema(naming); err != nil {
		return nil, err
	}
	e.rl, _ = e.schema.Table(core.ModelRateLimit)
	e.ak, _ = e.schema.Table(core.ModelAPIKey)
	ddl, err := gen.DDL(e.schema, e.dialect)
	if err != nil {
		return nil, err
	}
	drop := gen.DropDDL(e.schema, e.dialect)
	e.cleanup = append(e.cleanup, func() {
		for _, s := range drop {
			e.pool.ExecContext(context.Background(), s)
		}
	})
	for _, s := range ddl {
		if _, err := e.pool.ExecContext(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, s, err)
		}
	}

	col := func(t *driver.Table, field string) string {
		c, _ := t.Column(field)
		return e.dialect.Quote(c.Name)
	}
	e.rlName, e.cKey, e.cCount, e.cLast = e.dialect.Quote(e.rl.Name), col(e.rl, "key"), col(e.rl, "count"), col(e.rl, "lastRequest")
	e.akName, e.cID, e.cName, e.cRequests = e.dialect.Quote(e.ak.Name), col(e.ak, "id"), col(e.ak, "name"), col(e.ak, "requestCount")

	e.seededAt = time.Now().UnixMilli()
	e.ukeys = make([]string, cfg.keys)
	for i := range e.ukeys {
		e.ukeys[i] = fmt.Sprintf("u%05d", i)
	}
	rows := map[string]int64{"hot": 0, "deny": denyMax}
	for _, k := range e.ukeys {
		rows[k] = 0
	}
	if err := e.insertCounters(ctx, rows); err != nil {
		return nil, fmt.Errorf("%s: seeding counters: %w", name, err)
	}
	return e, nil
}

// insertCounters inserts rate-limit rows, key → count, in the current window.
func (e *sqlEnv) insertCounters(ctx context.Context, rows map[string]int64) error {
	const batch = 500
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	for len(keys) > 0 {
		n := min(batch, len(keys))
		var b strings.Builder
		args := make([]any, 0, 3*n)
		fmt.Fprintf(&b, "INSERT INTO %s (%s, %s, %s) VALUES ", e.rlName, e.cKey, e.cCount, e.cLast)
		for i, k := range keys[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?)")
			args = append(args, k, rows[k], e.seededAt)
		}
		if _, err := e.pool.ExecContext(ctx, e.sql(b.String()), args...); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// freshCounter inserts a rate-limit row at count 0 under a new key.
func (e *sqlEnv) freshCounter(ctx context.Context, label string) (string, error) {
	k := fmt.Sprintf("burst-%s-%d", label, e.burstSeq.Add(1))
	return k, e.insertCounters(ctx, map[string]int64{k: 0})
}

// counterOf reads the count of one rate-limit key.
func (e *sqlEnv) counterOf(ctx context.Context, key string) (int64, error) {
	var c int64
	err := e.pool.QueryRowContext(ctx, e.sql(fmt.Sprintf("SELECT %s FROM %s WHERE %s = ?", e.cCount, e.rlName, e.cKey)), key).Scan(&c)
	return c, err
}

// rateLimitKey returns the key of a decision in a scenario, and its limit.
func (e *sqlEnv) rateLimitKey(sc scenario) (func(k int) string, int64) {
	switch sc {
	case uniformKeys, coldKeys:
		return func(k int) string { return e.ukeys[k] }, bigMax
	case denialStorm:
		return func(int) string { return "deny" }, denyMax
	default:
		return func(int) string { return "hot" }, bigMax
	}
}

// storedCounters sums the rate-limit counts of a scenario's keys.
func (e *sqlEnv) storedCounters(ctx context.Context, sc scenario) (sum, max int64, err error) {
	where, arg := e.cKey+" = ?", "hot"
	switch sc {
	case uniformKeys, coldKeys:
		where, arg = e.cKey+" LIKE ?", "u%"
	case denialStorm:
		arg = "deny"
	}
	q := fmt.Sprintf("SELECT COALESCE(SUM(%s), 0), COALESCE(MAX(%s), 0) FROM %s WHERE %s", e.cCount, e.cCount, e.rlName, where)
	err = e.pool.QueryRowContext(ctx, e.sql(q), arg).Scan(&sum, &max)
	return sum, max, err
}

// storedRequests sums the API keys' request counts of a scenario.
func (e *sqlEnv) storedRequests(ctx context.Context, sc scenario) (sum, max int64, err error) {
	q := fmt.Sprintf("SELECT COALESCE(SUM(%s), 0), COALESCE(MAX(%s), 0) FROM %s WHERE %s = ?", e.cRequests, e.cRequests, e.akName, e.cName)
	err = e.pool.QueryRowContext(ctx, e.sql(q), string(sc)).Scan(&sum, &max)
	return sum, max, err
}

func (e *sqlEnv) requestsOf(ctx context.Context, id int64) (int64, error) {
	var c int64
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s = ?", e.cRequests, e.akName, e.cID)
	err := e.pool.QueryRowContext(ctx, e.sql(q), id).Scan(&c)
	return c, err
}

func (e *sqlEnv) version(ctx context.Context) string {
	q := "SELECT version()"
	if e.dialect == gen.SQLite {
		q = "SELECT sqlite_version()"
	}
	var v string
	if err := e.pool.QueryRowContext(ctx, q).Scan(&v); err != nil {
		return "?"
	}
	if i := strings.Index(v, " on "); i > 0 { // PostgreSQL's build details
		v = v[:i]
	}
	return v
}

func (e *sqlEnv) close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
	e.cleanup = nil
}

var errNoRow = errors.New("the key has no row")

// settle vacuums the run's tables on PostgreSQL before each cell, so that
// every cell starts on tables without the dead row versions the cells
// before it left, as autovacuum would keep them (a server may run with it
// off, or it may not have come round yet): otherwise an approach measured
// later in a round pays for the updates of those before it.
func (e *sqlEnv) settle(ctx context.Context) error {
	if e.dialect != gen.Postgres {
		return nil
	}
	_, err := e.pool.ExecContext(ctx, "VACUUM "+e.rlName+", "+e.akName)
	return err
}
