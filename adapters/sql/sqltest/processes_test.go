package sqltest_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// processBackendEnv names the backend and processDSNEnv its DSN for the
// child processes of adaptertest.RunProcesses.
const (
	processBackendEnv = "SQLTEST_PROCESS_BACKEND"
	processDSNEnv     = "SQLTEST_PROCESS_DSN"
)

func TestProcesses(t *testing.T) {
	for _, b := range []backend{sqliteBackend(), postgresBackend(), mysqlBackend(false)} {
		t.Run(b.name, func(t *testing.T) {
			t.Setenv(processBackendEnv, b.name)
			t.Setenv(processDSNEnv, b.dsn(t))
			adaptertest.RunProcesses(t, processTarget(b))
		})
	}
}

func TestProcessChild(t *testing.T) {
	for _, b := range allBackends() {
		if b.name == os.Getenv(processBackendEnv) {
			adaptertest.ProcessChild(t, processTarget(b))
			return
		}
	}
	t.Skip("a child process of TestProcesses")
}

func processTarget(b backend) adaptertest.ProcessTarget {
	open := func(ctx context.Context) (*sql.DB, error) {
		db, err := sql.Open(b.driver, os.Getenv(processDSNEnv))
		if err == nil && b.dialect != sluicesql.SQLite {
			db.SetMaxOpenConns(maxConnsPerPool)
		}
		return db, err
	}
	return adaptertest.ProcessTarget{
		OpenDB: func(ctx context.Context, tables map[string]string) (*core.DB, func(), error) {
			pool, err := open(ctx)
			if err != nil {
				return nil, nil, err
			}
			db, err := sluicesql.Open(pool, b.dialect, core.WithNaming(core.Naming{Tables: tables}))
			if err != nil {
				_ = pool.Close()
				return nil, nil, err
			}
			return db, func() { _ = pool.Close() }, nil
		},
		DropTables: func(ctx context.Context, tables map[string]string) error {
			pool, err := open(ctx)
			if err != nil {
				return err
			}
			defer pool.Close()
			for _, q := range gen.DropDDL(core.MustSchema(core.Naming{Tables: tables}), b.gen) {
				if _, err := pool.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
