package server

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	entdialect "entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "github.com/go-sql-driver/mysql" // registers "mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/schema"
	gormmysql "gorm.io/driver/mysql"
	gormpostgres "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	_ "modernc.org/sqlite" // registers "sqlite", the one SQLite driver of every ORM here

	sluicebun "github.com/sluice-go/sluice/adapters/bun"
	sluiceent "github.com/sluice-go/sluice/adapters/ent"
	sluicegorm "github.com/sluice-go/sluice/adapters/gorm"
	"github.com/sluice-go/sluice/adapters/gorm/sqlitegorm"
	sluicepgx "github.com/sluice-go/sluice/adapters/pgx"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// maxConns bounds the connection pool.
const maxConns = 10

// database is an open database: the sluice handle on the chosen ORM and
// the database/sql pool under it, which runs the DDL.
type database struct {
	db      *core.DB
	pool    *sql.DB
	pgx     *pgxpool.Pool // only with ORM pgx
	dialect gen.Dialect
	where   string // for the banner: the file or the server
	tempDir string // removed on close, when the SQLite file is ours
}

// openDatabase opens cfg's database and wraps it in cfg's ORM. One pool
// serves both the ORM and the DDL, so the demo holds one set of
// connections whatever the ORM.
func openDatabase(ctx context.Context, cfg Config) (_ *database, err error) {
	d := &database{}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	var driver, dsn string
	switch cfg.DB {
	case DBSQLite:
		d.dialect, driver = gen.SQLite, "sqlite"
		path := cfg.DSN
		if path == "" {
			if d.tempDir, err = os.MkdirTemp("", "sluice-demo-"); err != nil {
				return nil, fmt.Errorf("creating a directory for the SQLite file: %w", err)
			}
			path = filepath.Join(d.tempDir, "sluice-demo.db")
		}
		if strings.HasPrefix(path, "file:") {
			dsn, d.where = path, path
		} else {
			// Every adapter documents the same options: a busy timeout, WAL,
			// and BEGIN IMMEDIATE, which concurrent writers need.
			dsn, d.where = sluicesql.SQLiteDSN(path), path
		}
	case DBPostgres:
		d.dialect, driver, dsn, d.where = gen.Postgres, "pgx", cfg.DSN, "PostgreSQL"
	case DBMySQL:
		d.dialect, driver, dsn, d.where = gen.MySQL, "mysql", cfg.DSN, "MySQL"
	}
	if d.pool, err = sql.Open(driver, dsn); err != nil {
		return nil, fmt.Errorf("opening %s: %w", cfg.DB, err)
	}
	// A bounded pool: a burst of a few hundred requests must queue for
	// connections rather than open one each and exhaust the server's
	// max_connections (MariaDB's default is 151). Each sluice call holds
	// one connection at a time, so waiting for one cannot deadlock.
	d.pool.SetMaxOpenConns(maxConns)
	d.pool.SetMaxIdleConns(maxConns)
	if err = d.pool.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.DB, err)
	}
	opts := []core.Option{core.WithNaming(cfg.Naming)}
	switch cfg.ORM {
	case ORMGorm:
		d.db, err = openGorm(d.pool, d.dialect, opts)
	case ORMBun:
		d.db, err = openBun(d.pool, d.dialect, opts)
	case ORMEnt:
		d.db, err = openEnt(d.pool, d.dialect, opts)
	case ORMSQL:
		d.db, err = sluicesql.Open(d.pool, sqlDialects[d.dialect], opts...)
	case ORMPgx:
		d.db, err = d.openPgx(ctx, cfg.DSN, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", cfg.ORM, cfg.DB, err)
	}
	return d, nil
}

// sqlDialects names each DDL dialect for the SQL engine.
var sqlDialects = map[gen.Dialect]sluicesql.Dialect{gen.SQLite: sluicesql.SQLite, gen.Postgres: sluicesql.Postgres, gen.MySQL: sluicesql.MySQL}

// openPgx opens a pgx pool of its own beside the database/sql one (which
// runs the DDL); close releases it.
func (d *database) openPgx(ctx context.Context, dsn string, opts []core.Option) (*core.DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	if d.pgx, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, err
	}
	return sluicepgx.Open(ctx, d.pgx, opts...)
}

func openGorm(pool *sql.DB, d gen.Dialect, opts []core.Option) (*core.DB, error) {
	var dialector gorm.Dialector
	switch d {
	case gen.SQLite:
		// The dialector alone, on the modernc pool: pure Go, and it
		// registers no second "sqlite" driver beside bun's and ent's.
		dialector = sqlitegorm.Dialector(pool)
	case gen.Postgres:
		dialector = gormpostgres.New(gormpostgres.Config{Conn: pool})
	case gen.MySQL:
		dialector = gormmysql.New(gormmysql.Config{Conn: pool})
	}
	// Silent: under a burst SQLite serialises writers and gorm would log
	// every wait as a slow query.
	g, err := gorm.Open(dialector, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		return nil, err
	}
	return sluicegorm.Open(g, opts...)
}

func openBun(pool *sql.DB, d gen.Dialect, opts []core.Option) (*core.DB, error) {
	var dialect schema.Dialect
	switch d {
	case gen.SQLite:
		dialect = sqlitedialect.New()
	case gen.Postgres:
		dialect = pgdialect.New()
	case gen.MySQL:
		dialect = mysqldialect.New()
	}
	return sluicebun.Open(bun.NewDB(pool, dialect), opts...)
}

func openEnt(pool *sql.DB, d gen.Dialect, opts []core.Option) (*core.DB, error) {
	name := map[gen.Dialect]string{gen.SQLite: entdialect.SQLite, gen.Postgres: entdialect.Postgres, gen.MySQL: entdialect.MySQL}[d]
	return sluiceent.Open(entsql.OpenDB(name, pool), opts...)
}

// createTables runs gen's DDL for the DB's schema: CREATE TABLE and CREATE
// INDEX statements that skip what exists, so a restart keeps its keys.
func (d *database) createTables(ctx context.Context) error {
	stmts, err := gen.DDL(d.db.Schema(), d.dialect)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := d.pool.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("creating tables: %w\n%s", err, s)
		}
	}
	return nil
}

// dropTables drops the tables of the DB's schema.
func (d *database) dropTables(ctx context.Context) error {
	for _, s := range gen.DropDDL(d.db.Schema(), d.dialect) {
		if _, err := d.pool.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("dropping tables: %w", err)
		}
	}
	return nil
}

func (d *database) close() error {
	var err error
	if d.pgx != nil {
		d.pgx.Close()
	}
	if d.pool != nil {
		err = d.pool.Close()
	}
	if d.tempDir != "" {
		if rerr := os.RemoveAll(d.tempDir); err == nil {
			err = rerr
		}
	}
	return err
}
