package gormtest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/gen"
)

// TestGalera runs the cluster cases (adaptertest.RunCluster) on gorm over a
// MariaDB Galera cluster, one pool per node (SLUICE_GALERA_DSNS;
// scripts/galera/start.sh starts one).
func TestGalera(t *testing.T) {
	adaptertest.RunCluster(t, adaptertest.OnNodes(adaptertest.GaleraDSNs, func(dsn string) adaptertest.HarnessMaker {
		return backend{"Galera", gen.MySQL, func(testing.TB) string { return dsn }}.maker()
	}))
}
