package sqltest_test

import (
	"context"
	"testing"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// TestGalera runs the cluster cases (adaptertest.RunCluster) on database/sql
// over a MariaDB Galera cluster, one pool per node (SLUICE_GALERA_DSNS;
// scripts/galera/start.sh starts one).
func TestGalera(t *testing.T) {
	adaptertest.RunCluster(t, galeraMaker())
}

// galeraHarness is the harness of database/sql on a cluster: MakeAdapter's
// pool and the tables on the first node, each MakePeer's pool on the next
// node, round-robin.
type galeraHarness struct {
	harness
	dsns []string
	next int
}

func galeraMaker() adaptertest.HarnessMaker {
	return func(ctx context.Context, t *testing.T) (adaptertest.Harness, error) {
		dsns := adaptertest.GaleraDSNs(t)
		b := mysqlBackend(false)
		b.name = "galera"
		return &galeraHarness{harness: harness{t: t, b: b, dsn: dsns[0]}, dsns: dsns}, nil
	}
}

func (h *galeraHarness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	h.mu.Lock()
	h.next++
	dsn := h.dsns[h.next%len(h.dsns)]
	h.mu.Unlock()
	db := h.b.open(h.t, dsn)
	// DDL replicates in total order, but the node may not have applied
	// MakeAdapter's tables yet: wait until it has.
	if _, err := db.ExecContext(ctx, "SET STATEMENT wsrep_sync_wait=1 FOR SELECT 1"); err != nil {
		_ = db.Close()
		return nil, err
	}
	h.mu.Lock()
	h.dbs = append(h.dbs, db)
	h.mu.Unlock()
	return sluicesql.NewDB(ctx, db, h.b.dialect)
}
