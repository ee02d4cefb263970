package apikey

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// store is where a Manager keeps its keys: the database ([New], dbStore,
// with its remembered keys and its optional shared cache) or a secondary
// storage alone ([NewStorageOnly], storageStore, with the locations it
// remembers). The Manager validates input, turns stored keys into [Key]s
// and tells the observer; the store reads, decides and writes, each in
// its own files (database*.go, cache.go and keycache.go; storage*.go).
type store interface {
	// checkSchema runs the start-up check; unless again, only until it
	// has passed once.
	checkSchema(ctx context.Context, again bool) error
	// verify checks the key whose hash is given, on the manager's clock,
	// and spends cost and the named limits spend (in name order).
	verify(ctx context.Context, hash string, cost int64, req *required, spend []keystore.LimitSpend) (Result, error)
	create(ctx context.Context, s *keystore.Key) error
	byID(ctx context.Context, id int64) (*keystore.Key, error) // nil for none
	// search is the keys f selects with ids above after, in id order, at
	// most limit (0: all).
	search(ctx context.Context, f Filter, after int64, limit int) ([]*keystore.Key, error)
	// update sets the fields f (JSON names of keystore.Key; times in epoch
	// ms) of key id; nil for an unknown id.
	update(ctx context.Context, id int64, f map[string]any) (*keystore.Key, error)
	delete(ctx context.Context, id int64) (bool, error)
	deleteExpired(ctx context.Context, now time.Time) (int64, error)
	// reroll gives key id the hash that mk makes from its prefix, the old
	// one opening it for grace more; nil for an unknown id.
	reroll(ctx context.Context, id int64, mk newKey, now time.Time, grace time.Duration) (*keystore.Key, error)
	// setOwnerLimits makes cfg (Limits text, nil for none) an owner's
	// limits, and ownerLimits reads them with their counters.
	setOwnerLimits(ctx context.Context, ref string, cfg *string) error
	ownerLimits(ctx context.Context, ref string) (map[string]LimitUsage, error)
}

var (
	_ store = (*dbStore)(nil)
	_ store = (*storageStore)(nil)
)
