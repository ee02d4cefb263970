package buntest_test

import (
	"context"
	"testing"

	sluicebun "github.com/sluice-go/sluice/adapters/bun"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/schema"
)

// TestProcesses races decisions through bun from four processes, each with
// its own pool (adaptertest.RunProcesses).
func TestProcesses(t *testing.T) { adaptertest.RunProcesses(t, processTargets()...) }

func TestProcessChild(t *testing.T) { adaptertest.ProcessChild(t, processTargets()...) }

// processTargets are SQLite, PostgreSQL and MySQL; each process opens
// them on the DSN the test process read.
func processTargets() []adaptertest.ProcessTarget {
	var targets []adaptertest.ProcessTarget
	for _, c := range []struct {
		name string
		mk   func(testing.TB) target
		tg   target // without its DSN
	}{
		{"sqlite", sqliteTarget, target{driver: "sqlite", dialect: gen.SQLite, bunDial: func() schema.Dialect { return sqlitedialect.New() }}},
		{"postgres", postgresTarget, target{driver: "pgx", dialect: gen.Postgres, bunDial: func() schema.Dialect { return pgdialect.New() }}},
		{"mysql", func(t testing.TB) target { return mysqlTarget(t, false) }, target{driver: "mysql", dialect: gen.MySQL, bunDial: func() schema.Dialect { return mysqldialect.New() }}},
	} {
		on := func(dsn string) target { tg := c.tg; tg.name, tg.dsn = c.name, dsn; return tg }
		targets = append(targets, adaptertest.ProcessTarget{
			Name: c.name,
			Addr: func(t testing.TB) string { return c.mk(t).dsn },
			OpenDB: func(ctx context.Context, dsn string, tables map[string]string) (*core.DB, func(), error) {
				b, err := on(dsn).open()
				if err != nil {
					return nil, nil, err
				}
				db, err := sluicebun.Open(b, core.WithNaming(core.Naming{Tables: tables}))
				if err != nil {
					_ = b.Close()
					return nil, nil, err
				}
				return db, func() { _ = b.Close() }, nil
			},
			DropTables: func(ctx context.Context, dsn string, tables map[string]string) error {
				b, err := on(dsn).open()
				if err != nil {
					return err
				}
				defer b.Close()
				for _, q := range gen.DropDDL(core.MustSchema(core.Naming{Tables: tables}), c.tg.dialect) {
					if _, err := b.ExecContext(ctx, q); err != nil {
						return err
					}
				}
				return nil
			},
		})
	}
	return targets
}
