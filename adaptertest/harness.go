package adaptertest

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/core"
)

// Capabilities are what a harness's adapter claims. The suite skips, with
// the reason, every case that needs a capability the adapter does not claim.
type Capabilities struct {
	// NativeIncrement: the adapter implements core.Incrementer. Without it
	// the suite still runs everything through core's transaction fallback.
	NativeIncrement bool
	// Transactions: the adapter implements core.Transactor.
	Transactions bool
	// Returning: the dialect has UPDATE … RETURNING (informational; the
	// contract is the same either way).
	Returning bool
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
	MakeAdapter(ctx context.Context, s *core.Schema) (core.Adapter, error)
	// MakePeer returns another adapter on the tables MakeAdapter created,
	// over a new and independent connection pool. It is called only when
	// Capabilities().SeveralPools is true.
	MakePeer(ctx context.Context, s *core.Schema) (core.Adapter, error)
	// Capabilities describes the adapter.
	Capabilities() Capabilities
	// Close drops what MakeAdapter created and closes every pool.
	Close()
}

// HarnessMaker builds a fresh harness for one subtest. It may call t.Skip
// when its database is not configured (see [PostgresDSN]).
type HarnessMaker func(ctx context.Context, t *testing.T) (Harness, error)
