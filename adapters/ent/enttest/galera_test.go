package enttest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestGalera runs the cluster cases (adaptertest.RunCluster) on ent over a
// MariaDB Galera cluster, one pool per node (SLUICE_GALERA_DSNS;
// scripts/galera/start.sh starts one).
func TestGalera(t *testing.T) {
	adaptertest.RunCluster(t, adaptertest.OnNodes(adaptertest.GaleraDSNs, func(dsn string) adaptertest.HarnessMaker {
		b := mysqlBackend(false)
		b.name, b.dsn = "galera", func(testing.TB) string { return dsn }
		return b.maker()
	}))
}
