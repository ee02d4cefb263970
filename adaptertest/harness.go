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
	// Serializable: every transaction on the harness's adapters runs at
	// SERIALIZABLE isolation (see [PostgresSerializableDSN]), what
	// [RunSerializable] runs on.
	Serializable bool
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
