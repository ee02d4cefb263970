package pgxtest_test

import (
	"context"
	"testing"

	sluicepgx "github.com/sluice-go/sluice/adapters/pgx"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// TestProcesses races decisions on pgx from four processes, each with its
// own pool (adaptertest.RunProcesses).
func TestProcesses(t *testing.T) { adaptertest.RunProcesses(t, processTarget) }

func TestProcessChild(t *testing.T) { adaptertest.ProcessChild(t, processTarget) }

var processTarget = adaptertest.ProcessTarget{
	Name: "postgres",
	Addr: adaptertest.PostgresDSN,
	OpenDB: func(ctx context.Context, dsn string, tables map[string]string) (*core.DB, func(), error) {
		p, err := openPool(ctx, dsn, 4) // five pools race at once on a shared server
		if err != nil {
			return nil, nil, err
		}
		db, err := sluicepgx.Open(ctx, p, core.WithNaming(core.Naming{Tables: tables}))
		if err != nil {
			p.Close()
			return nil, nil, err
		}
		return db, p.Close, nil
	},
	DropTables: func(ctx context.Context, dsn string, tables map[string]string) error {
		p, err := openPool(ctx, dsn, 1)
		if err != nil {
			return err
		}
		defer p.Close()
		for _, q := range gen.DropDDL(core.MustSchema(core.Naming{Tables: tables}), gen.Postgres) {
			if _, err := p.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	},
}
