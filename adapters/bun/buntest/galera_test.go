package buntest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/gen"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/schema"
)

// TestGalera runs the cluster cases (adaptertest.RunCluster) on bun over a
// MariaDB Galera cluster, one pool per node (SLUICE_GALERA_DSNS;
// scripts/galera/start.sh starts one).
func TestGalera(t *testing.T) {
	adaptertest.RunCluster(t, adaptertest.OnNodes(adaptertest.GaleraDSNs, func(dsn string) adaptertest.HarnessMaker {
		return maker(func(testing.TB) target {
			return target{name: "galera", driver: "mysql", dsn: dsn, dialect: gen.MySQL,
				bunDial: func() schema.Dialect { return mysqldialect.New() }}
		})
	}))
}
