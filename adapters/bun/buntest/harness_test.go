package buntest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"github.com/sluice-go/sluice/adapters/bun"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/schema"
	_ "modernc.org/sqlite" // registers "sqlite"
)

// target is one database the tests run against.
type target struct {
	name    string
	driver  string
	dsn     string
	dialect gen.Dialect
	bunDial func() schema.Dialect
}

// poolConns bounds each test pool.
const poolConns = 4

// open opens a new, independent pool on the target.
func (tg target) open() (*bun.DB, error) {
	sqldb, err := sql.Open(tg.driver, tg.dsn)
	if err != nil {
		return nil, err
	}
	// The servers are shared with other test processes, and a race case
	// opens up to five pools: stay far below the connection limits
	// (MariaDB's default is 151); pools queue the rest.
	sqldb.SetMaxOpenConns(poolConns)
	sqldb.SetMaxIdleConns(poolConns)
	return bun.NewDB(sqldb, tg.bunDial()), nil
}

func sqliteTarget(t testing.TB) target {
	return target{name: "sqlite", driver: "sqlite", dsn: adaptertest.SQLiteDSN(t), dialect: gen.SQLite,
		bunDial: func() schema.Dialect { return sqlitedialect.New() }}
}

func postgresTarget(t testing.TB) target {
	return target{name: "postgres", driver: "pgx", dsn: adaptertest.PostgresDSN(t), dialect: gen.Postgres,
		bunDial: func() schema.Dialect { return pgdialect.New() }}
}

// mysqlTarget reads SLUICE_MYSQL_DSN and sets clientFoundRows as asked,
// whatever the variable says: the adapter must be right either way.
func mysqlTarget(t testing.TB, clientFoundRows bool) target {
	cfg, err := mysql.ParseDSN(adaptertest.MySQLDSN(t))
	if err != nil {
		t.Fatalf("%s: %v", adaptertest.EnvMySQL, err)
	}
	cfg.ClientFoundRows = clientFoundRows
	name := "mysql"
	if clientFoundRows {
		name = "mysql-foundrows"
	}
	return target{name: name, driver: "mysql", dsn: cfg.FormatDSN(), dialect: gen.MySQL,
		bunDial: func() schema.Dialect { return mysqldialect.New() }}
}

// harness implements adaptertest.Harness on one target.
type harness struct {
	t      testing.TB
	tg     target
	pools  []*bun.DB
	schema *core.Schema
}

// maker returns an adaptertest.HarnessMaker for the target that tg builds
// (tg may skip the test when its database is not configured).
func maker(tg func(t testing.TB) target) adaptertest.HarnessMaker {
	return func(ctx context.Context, t *testing.T) (adaptertest.Harness, error) {
		return &harness{t: t, tg: tg(t)}, nil
	}
}

func (h *harness) MakeAdapter(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	db, err := h.tg.open()
	if err != nil {
		return nil, err
	}
	h.pools = append(h.pools, db)
	ddl, err := gen.DDL(s, h.tg.dialect)
	if err != nil {
		return nil, err
	}
	h.schema = s
	for _, stmt := range ddl {
		if _, err := db.DB.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return newAdapter(db)
}

// newAdapter is sluicebun.New as a driver.Adapter (a nil *sluicesql.Adapter
// must not become a non-nil interface).
func newAdapter(db bun.IDB) (driver.Adapter, error) {
	a, err := sluicebun.New(db)
	if err != nil {
		return nil, err
	}
	return a, nil
}

func (h *harness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	db, err := h.tg.open()
	if err != nil {
		return nil, err
	}
	h.pools = append(h.pools, db)
	return newAdapter(db)
}

func (h *harness) Capabilities() adaptertest.Capabilities {
	return adaptertest.Capabilities{SeveralPools: true}
}

func (h *harness) Close() {
	var errs []error
	if h.schema != nil && len(h.pools) > 0 {
		for _, stmt := range gen.DropDDL(h.schema, h.tg.dialect) {
			if _, err := h.pools[0].DB.ExecContext(context.Background(), stmt); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, p := range h.pools {
		errs = append(errs, p.Close())
	}
	if err := errors.Join(errs...); err != nil {
		h.t.Errorf("closing %s harness: %v", h.tg.name, err)
	}
}

// targets are the databases every focused test runs on.
var targets = []struct {
	name string
	tg   func(t testing.TB) target
}{
	{"sqlite", sqliteTarget},
	{"postgres", postgresTarget},
	{"mysql", func(t testing.TB) target { return mysqlTarget(t, false) }},
	{"mysql-foundrows", func(t testing.TB) target { return mysqlTarget(t, true) }},
}

func TestConformance(t *testing.T) {
	for _, tc := range targets {
		t.Run(tc.name, func(t *testing.T) { adaptertest.Run(t, maker(tc.tg)) })
	}
}

// BeginTx begins a bun transaction on the *bun.DB behind db: the bun.Tx a
// caller's handler holds (adaptertest.TxHandles).
func (h *harness) BeginTx(ctx context.Context, db *core.DB) (adaptertest.TxHandle, error) {
	b, ok := db.Adapter().(driver.Unwrapper).Unwrap().(*bun.DB)
	if !ok {
		return adaptertest.TxHandle{}, fmt.Errorf("the adapter runs on %T, not a *bun.DB", db.Adapter().(driver.Unwrapper).Unwrap())
	}
	tx, err := b.BeginTx(ctx, nil)
	if err != nil {
		return adaptertest.TxHandle{}, err
	}
	return adaptertest.TxHandle{Handle: tx, Commit: tx.Commit, Rollback: tx.Rollback}, nil
}
