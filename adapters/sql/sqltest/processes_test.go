package sqltest_test

import (
	"context"
	"database/sql"
	"testing"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// TestProcesses races decisions from four processes, each with its own
// pool (adaptertest.RunProcesses), on SQLite, PostgreSQL and MariaDB.
func TestProcesses(t *testing.T) { adaptertest.RunProcesses(t, processTargets()...) }

func TestProcessChild(t *testing.T) { adaptertest.ProcessChild(t, processTargets()...) }

// processConns bounds each process's pool: five pools race at once on a
// server that other test packages share (PostgreSQL allows 100 clients by
// default).
const processConns = 4

func processTargets() []adaptertest.ProcessTarget {
	var targets []adaptertest.ProcessTarget
	for _, b := range []backend{sqliteBackend(), postgresBackend(), mysqlBackend(false)} {
		open := func(dsn string) *sql.DB { return b.open(nopTB{}, dsn) }
		targets = append(targets, adaptertest.ProcessTarget{
			Name: b.name,
			Addr: b.dsn,
			OpenDB: func(ctx context.Context, dsn string, tables map[string]string) (*core.DB, func(), error) {
				pool := open(dsn)
				pool.SetMaxOpenConns(processConns)
				pool.SetMaxIdleConns(processConns) // reconnecting costs more than the race
				db, err := sluicesql.Open(pool, b.dialect, core.WithNaming(core.Naming{Tables: tables}))
				if err != nil {
					_ = pool.Close()
					return nil, nil, err
				}
				return db, func() { _ = pool.Close() }, nil
			},
			DropTables: func(ctx context.Context, dsn string, tables map[string]string) error {
				pool := open(dsn)
				defer pool.Close()
				for _, q := range gen.DropDDL(core.MustSchema(core.Naming{Tables: tables}), b.gen) {
					if _, err := pool.ExecContext(ctx, q); err != nil {
						return err
					}
				}
				return nil
			},
		})
	}
	return targets
}

// nopTB lets backend.open, which takes a testing.TB only to fail with, run
// outside a test's goroutine; sql.Open fails only on an unknown driver.
type nopTB struct{ testing.TB }

func (nopTB) Helper()                   {}
func (nopTB) Fatal(args ...any)         { panic(args) }
func (nopTB) Fatalf(f string, a ...any) { panic(f) }
