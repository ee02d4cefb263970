package main

import (
	"database/sql"
	"flag"
	"fmt"
	"io"
	"strings"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/gen"
)

// cli holds the common options and what they opened.
type cli struct {
	driver, dsn, tables string
	json                bool
	set                 bool // the common flags' defaults were taken from the environment
	getenv              func(string) string
	out                 io.Writer

	pool *sql.DB
	db   *core.DB
}

// common declares the flags every command accepts, defaulting to what an
// earlier parse found or else to the environment.
func (c *cli) common(fs *flag.FlagSet, getenv func(string) string) {
	if !c.set {
		c.driver, c.dsn, c.tables, c.set = getenv("SLUICE_DRIVER"), getenv("SLUICE_DSN"), getenv("SLUICE_TABLES"), true
	}
	fs.StringVar(&c.driver, "driver", c.driver, "sqlite, postgres or mysql ($SLUICE_DRIVER)")
	fs.StringVar(&c.dsn, "dsn", c.dsn, "the database ($SLUICE_DSN)")
	fs.StringVar(&c.tables, "tables", c.tables, "table names, model=name,… ($SLUICE_TABLES)")
	fs.BoolVar(&c.json, "json", c.json, "print JSON")
}

// drivers maps -driver to the database/sql driver, the engine's dialect
// and gen's.
var drivers = map[string]struct {
	name    string
	dialect sluicesql.Dialect
	gen     gen.Dialect
}{
	"sqlite":   {"sqlite", sluicesql.SQLite, gen.SQLite},
	"postgres": {"pgx", sluicesql.Postgres, gen.Postgres},
	"mysql":    {"mysql", sluicesql.MySQL, gen.MySQL},
}

// naming parses -tables.
func (c *cli) naming() (core.Naming, error) {
	n := core.Naming{}
	if c.tables == "" {
		return n, nil
	}
	n.Tables = map[string]string{}
	for _, kv := range strings.Split(c.tables, ",") {
		model, table, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || model == "" || table == "" {
			return n, usagef("-tables: %q is not model=table", kv)
		}
		n.Tables[model] = table
	}
	return n, nil
}

// open opens the database through the SQL engine.
func (c *cli) open() (*core.DB, error) {
	if c.db != nil {
		return c.db, nil
	}
	d, ok := drivers[c.driver]
	switch {
	case c.driver == "":
		return nil, usagef("no database driver: give -driver or set SLUICE_DRIVER (sqlite, postgres or mysql)")
	case !ok:
		return nil, usagef("-driver %q: want sqlite, postgres or mysql", c.driver)
	case c.dsn == "":
		return nil, usagef("no database: give -dsn or set SLUICE_DSN")
	}
	naming, err := c.naming()
	if err != nil {
		return nil, err
	}
	dsn := c.dsn
	if c.driver == "sqlite" && !strings.HasPrefix(dsn, "file:") {
		dsn = sluicesql.SQLiteDSN(dsn)
	}
	if c.pool, err = sql.Open(d.name, dsn); err != nil {
		return nil, err
	}
	c.pool.SetMaxOpenConns(4)
	if c.db, err = sluicesql.Open(c.pool, d.dialect, core.WithNaming(naming)); err != nil {
		return nil, fmt.Errorf("opening the %s database: %w", c.driver, err)
	}
	return c.db, nil
}

// keys opens the database and a key manager on it.
func (c *cli) keys() (*apikey.Manager, error) {
	db, err := c.open()
	if err != nil {
		return nil, err
	}
	return apikey.New(db)
}

func (c *cli) close() {
	if c.pool != nil {
		c.pool.Close()
	}
}
