package enttest_test

import (
	"context"
	"os"
	"testing"

	sluiceent "github.com/sluice-go/sluice/adapters/ent"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// processBackendEnv names the backend and processDSNEnv its DSN for the
// child processes of adaptertest.RunProcesses.
const (
	processBackendEnv = "ENTTEST_PROCESS_BACKEND"
	processDSNEnv     = "ENTTEST_PROCESS_DSN"
)

// TestProcesses races decisions through ent from four processes, each
// with its own pool (adaptertest.RunProcesses).
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
	return adaptertest.ProcessTarget{
		OpenDB: func(ctx context.Context, tables map[string]string) (*core.DB, func(), error) {
			drv, err := b.open(os.Getenv(processDSNEnv))
			if err != nil {
				return nil, nil, err
			}
			db, err := sluiceent.Open(drv, core.WithNaming(core.Naming{Tables: tables}))
			if err != nil {
				_ = drv.Close()
				return nil, nil, err
			}
			return db, func() { _ = drv.Close() }, nil
		},
		DropTables: func(ctx context.Context, tables map[string]string) error {
			drv, err := b.open(os.Getenv(processDSNEnv))
			if err != nil {
				return err
			}
			defer drv.Close()
			for _, q := range gen.DropDDL(core.MustSchema(core.Naming{Tables: tables}), b.gen) {
				if _, err := drv.DB().ExecContext(ctx, q); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
