package apikey

import (
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/memory"
)

// The names below are those that storages, harnesses and tests written
// before the storage contract moved to package keystore refer to; they
// remain so that such code keeps compiling. A claim's Code is now a
// keystore.Code: compare it with keystore.UsageExceeded and its siblings,
// or convert it with Code(res.Code).
//
// Deprecated: use [keystore.Key], [keystore.Request], [keystore.Result],
// [keystore.Claimer], [keystore.Rerollable], [keystore.OwnerSharing],
// [keystore.Indexer], [keystore.LimitSpend], [keystore.Permission] and
// [memory.Storage].
type (
	StoredKey    = keystore.Key
	ClaimRequest = keystore.Request
	ClaimResult  = keystore.Result
	Claimer      = keystore.Claimer
	Rerollable   = keystore.Rerollable
	OwnerSharing = keystore.OwnerSharing
	Indexer      = keystore.Indexer
	LimitSpend   = keystore.LimitSpend
	Permission   = keystore.Permission
	MemoryStore  = memory.Storage
)

// ApplyClaim is [keystore.Apply].
//
// Deprecated: use [keystore.Apply].
func ApplyClaim(k, owner *StoredKey, req ClaimRequest) ClaimResult {
	return keystore.Apply(k, owner, req)
}

// NewMemoryStore returns core/memory's Storage on the given clock (nil:
// the monotonic clock), which keeps keys for storage-only mode.
//
// Deprecated: use [memory.NewStorage] with [memory.WithClock].
func NewMemoryStore(clock func() time.Time) *MemoryStore {
	return memory.NewStorage(memory.WithClock(clock))
}
