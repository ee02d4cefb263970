package gormtest_test

import (
	"context"
	"os"
	"testing"

	sluicegorm "github.com/sluice-go/sluice/adapters/gorm"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// processBackendEnv names the backend and processDSNEnv its DSN for the
// child processes of adaptertest.RunProcesses.
const (
	processBackendEnv = "GORMTEST_PROCESS_BACKEND"
	processDSNEnv     = "GORMTEST_PROCESS_DSN"
)

// TestProcesses races decisions through gorm from four processes, each
// with its own pool (adaptertest.RunProcesses).
func TestProcesses(t *testing.T) {
	for _, b := range backends()[:3] {
		t.Run(b.name, func(t *testing.T) {
			t.Setenv(processBackendEnv, b.name)
			t.Setenv(processDSNEnv, b.dsn(t))
			adaptertest.RunProcesses(t, processTarget(b))
		})
	}
}

func TestProcessChild(t *testing.T) {
	for _, b := range backends() {
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
			g, err := openGorm(b.dialect, os.Getenv(processDSNEnv))
			if err != nil {
				return nil, nil, err
			}
			pool, err := g.DB()
			if err != nil {
				return nil, nil, err
			}
			pool.SetMaxOpenConns(maxConns)
			db, err := sluicegorm.Open(g, core.WithNaming(core.Naming{Tables: tables}))
			if err != nil {
				_ = pool.Close()
				return nil, nil, err
			}
			return db, func() { _ = pool.Close() }, nil
		},
		DropTables: func(ctx context.Context, tables map[string]string) error {
			g, err := openGorm(b.dialect, os.Getenv(processDSNEnv))
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
	}
}
