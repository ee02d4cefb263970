package sqltest_test

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestGalera runs the cluster cases (adaptertest.RunCluster) on database/sql
// over a MariaDB Galera cluster, one pool per node (SLUICE_GALERA_DSNS;
// scripts/galera/start.sh starts one).
func TestGalera(t *testing.T) { adaptertest.RunCluster(t, galeraMaker()) }

// galeraMaker spreads database/sql's pools over the cluster's nodes.
func galeraMaker() adaptertest.HarnessMaker {
	return adaptertest.OnNodes(adaptertest.GaleraDSNs, func(dsn string) adaptertest.HarnessMaker {
		return func(ctx context.Context, t *testing.T) (adaptertest.Harness, error) {
			b := mysqlBackend(false)
			b.name = "galera"
			return &harness{t: t, b: b, dsn: dsn}, nil
		}
	})
}
