package buntest_test

import (
	"context"
	"os"
	"testing"

	sluicebun "github.com/sluice-go/sluice/adapters/bun"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// processTargetEnv names the target and processDSNEnv its DSN for the
// child processes of adaptertest.RunProcesses.
const (
	processTargetEnv = "BUNTEST_PROCESS_TARGET"
	processDSNEnv    = "BUNTEST_PROCESS_DSN"
)

func processTargets() []func(testing.TB) target {
	return []func(testing.TB) target{sqliteTarget, postgresTarget, func(t testing.TB) target { return mysqlTarget(t, false) }}
}

// TestProcesses races decisions through bun from four processes, each
// with its own pool (adaptertest.RunProcesses).
func TestProcesses(t *testing.T) {
	for _, mk := range processTargets() {
		tg := mk(t)
		t.Run(tg.name, func(t *testing.T) {
			t.Setenv(processTargetEnv, tg.name)
			t.Setenv(processDSNEnv, tg.dsn)
			adaptertest.RunProcesses(t, processTarget(tg))
		})
	}
}

func TestProcessChild(t *testing.T) {
	name := os.Getenv(processTargetEnv)
	if name == "" {
		t.Skip("a child process of TestProcesses")
	}
	for _, mk := range processTargets() {
		if tg := mk(t); tg.name == name {
			tg.dsn = os.Getenv(processDSNEnv)
			adaptertest.ProcessChild(t, processTarget(tg))
			return
		}
	}
	t.Fatalf("no target %q", name)
}

func processTarget(tg target) adaptertest.ProcessTarget {
	return adaptertest.ProcessTarget{
		OpenDB: func(ctx context.Context, tables map[string]string) (*core.DB, func(), error) {
			b, err := tg.open()
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
		DropTables: func(ctx context.Context, tables map[string]string) error {
			b, err := tg.open()
			if err != nil {
				return err
			}
			defer b.Close()
			for _, q := range gen.DropDDL(core.MustSchema(core.Naming{Tables: tables}), tg.dialect) {
				if _, err := b.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
