package enttest_test

import (
	"context"
	"testing"

	sluiceent "github.com/sluice-go/sluice/adapters/ent"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// TestProcesses races decisions through ent from four processes, each
// with its own pool (adaptertest.RunProcesses).
func TestProcesses(t *testing.T) { adaptertest.RunProcesses(t, processTargets()...) }

func TestProcessChild(t *testing.T) { adaptertest.ProcessChild(t, processTargets()...) }

func processTargets() []adaptertest.ProcessTarget {
	var targets []adaptertest.ProcessTarget
	for _, b := range []backend{sqliteBackend(), postgresBackend(), mysqlBackend(false)} {
		targets = append(targets, adaptertest.ProcessTarget{
			Name: b.name,
			Addr: b.dsn,
			OpenDB: func(ctx context.Context, dsn string, tables map[string]string) (*core.DB, func(), error) {
				drv, err := b.open(dsn)
				if err != nil {
					return nil, nil, err
				}
				drv.DB().SetMaxOpenConns(4) // five pools race at once on a shared server
				drv.DB().SetMaxIdleConns(4) // and keep them: reconnecting costs more than the race
				db, err := sluiceent.Open(drv, core.WithNaming(core.Naming{Tables: tables}))
				if err != nil {
					_ = drv.Close()
					return nil, nil, err
				}
				return db, func() { _ = drv.Close() }, nil
			},
			DropTables: func(ctx context.Context, dsn string, tables map[string]string) error {
				drv, err := b.open(dsn)
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
		})
	}
	return targets
}
