package adaptertest

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Capabilities are what a harness declares because the suite cannot find
// them out from the adapter. What it can find out, it does, by type
// assertion on the adapter MakeAdapter returns: a native IncrementOne
// (driver.Incrementer) and transactions (driver.Transactor). The suite skips, with the reason, every case that needs
// something the adapter lacks or the harness does not declare.
type Capabilities struct {
	// SeveralPools: MakePeer returns adapters over independent connection
	// pools, as several application servers would have.
	SeveralPools bool
}

// Harness gives the suite adapters over one database. The suite builds a
// fresh harness for every subtest and closes it at the end of the subtest.
type Harness interface {
	// MakeAdapter creates every table of s, empty, and returns an adapter
	// on them. The suite gives each subtest its own table names, so that
	// tests sharing a database never collide.
	MakeAdapter(ctx context.Context, s *core.Schema) (driver.Adapter, error)
	// MakePeer returns another adapter on the tables MakeAdapter created,
	// over a new and independent connection pool. It is called only when
	// Capabilities().SeveralPools is true.
	MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error)
	// Capabilities declares what the suite cannot find out from the adapter.
	Capabilities() Capabilities
	// Close drops what MakeAdapter created and closes every pool.
	Close()
}

// HarnessMaker builds a fresh harness for one subtest. It may call t.Skip
// when its database is not configured (see [PostgresDSN]).
type HarnessMaker func(ctx context.Context, t *testing.T) (Harness, error)

// features is what the suite knows of a fixture's adapter: found out by
// type assertion, or declared by the harness.
type features struct {
	native bool // the adapter implements driver.Incrementer
	tx     bool // the adapter implements driver.Transactor
	pools  bool // the harness declares SeveralPools
}

func featuresOf(a driver.Adapter, declared Capabilities) features {
	_, native := a.(driver.Incrementer)
	_, tx := a.(driver.Transactor)
	return features{native: native, tx: tx, pools: declared.SeveralPools}
}

func needTransactions(c features) string {
	if !c.tx {
		return "the adapter does not implement driver.Transactor"
	}
	return ""
}

func needSeveralPools(c features) string {
	if !c.pools {
		return "the harness does not declare SeveralPools"
	}
	return ""
}

// needFallback: the case runs core's transaction fallback in place of the
// adapter's own IncrementOne, which needs both.
func needFallback(c features) string {
	switch {
	case !c.tx:
		return "the adapter does not implement driver.Transactor, which the fallback needs"
	case !c.native:
		return "the adapter does not implement driver.Incrementer: the plain variant already runs through the fallback"
	}
	return ""
}
