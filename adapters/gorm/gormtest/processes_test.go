package gormtest_test

import (
	"context"
	"testing"

	sluicegorm "github.com/sluice-go/sluice/adapters/gorm"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// TestProcesses races decisions through gorm from four processes, each
// with its own pool (adaptertest.RunProcesses).
func TestProcesses(t *testing.T) { adaptertest.RunProcesses(t, processTargets()...) }

func TestProcessChild(t *testing.T) { adaptertest.ProcessChild(t, processTargets()...) }

func processTargets() []adaptertest.ProcessTarget {
	var targets []adaptertest.ProcessTarget
	for _, b := range backends()[:3] {
		targets = append(targets, adaptertest.ProcessTarget{
			Name: b.name,
			Addr: b.dsn,
			OpenDB: func(ctx context.Context, dsn string, tables map[string]string) (*core.DB, func(), error) {
				g, err := openGorm(b.dialect, dsn)
				if err != nil {
					return nil, nil, err
				}
				pool, err := g.DB()
				if err != nil {
					return nil, nil, err
				}
				pool.SetMaxOpenConns(4) // five pools race at once on a shared server
				pool.SetMaxIdleConns(4) // and keep them: reconnecting costs more than the race
				db, err := sluicegorm.Open(g, core.WithNaming(core.Naming{Tables: tables}))
				if err != nil {
					_ = pool.Close()
					return nil, nil, err
				}
				return db, func() { _ = pool.Close() }, nil
			},
			DropTables: func(ctx context.Context, dsn string, tables map[string]string) error {
				g, err := openGorm(b.dialect, dsn)
				if err != nil {
					return err
				}
				if pool, err := g.DB(); err == nil {
					defer pool.Close()
				}
				for _, q := range gen.DropDDL(core.MustSchema(core.Naming{Tables: tables}), b.dialect) {
					if err := g.WithContext(ctx).Exec(q).Error; err != nil {
						return err
					}
				}
				return nil
			},
		})
	}
	return targets
}
