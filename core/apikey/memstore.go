package apikey

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core/memory"

	"github.com/sluice-go/sluice/core/driver"
)

// MemoryStore is core/memory's Storage (a [driver.SecondaryStorage] with
// sets, so also an [Indexer]) that also implements [Claimer] (and
// [Rerollable] and [OwnerSharing]), for storage-only mode in tests and
// single-process services. A claim reads and writes the key and its
// owner's record in one [memory.Storage.Update], under their shards' locks,
// which makes it atomic.
type MemoryStore struct {
	*memory.Storage
}

// NewMemoryStore returns an empty store. clock drives expiry; nil means
// the monotonic clock.
func NewMemoryStore(clock func() time.Time) *MemoryStore {
	return &MemoryStore{memory.NewStorage(memory.WithClock(clock))}
}

var (
	_ driver.SecondaryStorage = (*MemoryStore)(nil)
	_ Rerollable              = (*MemoryStore)(nil)
	_ OwnerSharing            = (*MemoryStore)(nil)
	_ Indexer                 = (*MemoryStore)(nil)
)

// ClaimChecksHash declares that Claim applies rule 0 of [ApplyClaim],
// which it does by calling it.
func (s *MemoryStore) ClaimChecksHash() {}

// ClaimSharesOwnerLimits declares that Claim applies [ClaimRequest.Owner],
// which it does by reading the owner's record in the same update.
func (s *MemoryStore) ClaimSharesOwnerLimits() {}

// Claim applies [ApplyClaim] to the key stored at key, and to the owner's
// record at req.Owner, in one atomic update.
func (s *MemoryStore) Claim(ctx context.Context, key string, req ClaimRequest) (ClaimResult, error) {
	keys := []string{key}
	if req.Owner != "" && req.Owner != key && len(req.Limits) > 0 {
		keys = append(keys, req.Owner)
	}
	var res ClaimResult
	err := s.Update(ctx, keys, func(values []string, found []bool) ([]bool, error) {
		if !found[0] {
			return nil, nil
		}
		var k StoredKey
		if err := json.Unmarshal([]byte(values[0]), &k); err != nil {
			return nil, fmt.Errorf("apikey: MemoryStore.Claim: %q: %w", key, err)
		}
		var owner *StoredKey
		if len(keys) > 1 && found[1] {
			owner = new(StoredKey)
			if err := json.Unmarshal([]byte(values[1]), owner); err != nil {
				return nil, fmt.Errorf("apikey: MemoryStore.Claim: %q: %w", req.Owner, err)
			}
		}
		res = ApplyClaim(&k, owner, req)
		if res.Code != "" || req.Cost <= 0 {
			return nil, nil
		}
		b, err := json.Marshal(&k)
		if err != nil {
			return nil, err
		}
		values[0] = string(b)
		write := []bool{true, false}
		if owner != nil { // rewritten as is when none of its limits was spent
			ob, err := json.Marshal(owner)
			if err != nil {
				return nil, err
			}
			values[1], write[1] = string(ob), true
		}
		return write, nil
	})
	if err != nil {
		return ClaimResult{}, err
	}
	return res, nil
}

// Patch merges fields into the key stored at key, in one atomic update.
func (s *MemoryStore) Patch(ctx context.Context, key string, fields map[string]any) (StoredKey, bool, error) {
	var (
		after StoredKey
		ok    bool
	)
	err := s.Update(ctx, []string{key}, func(values []string, found []bool) ([]bool, error) {
		if !found[0] {
			return nil, nil
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(values[0]), &obj); err != nil {
			return nil, fmt.Errorf("apikey: MemoryStore.Patch: %q: %w", key, err)
		}
		for f, val := range fields {
			b, err := json.Marshal(val)
			if err != nil {
				return nil, fmt.Errorf("apikey: MemoryStore.Patch: field %q: %w", f, err)
			}
			obj[f] = b
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &after); err != nil {
			return nil, fmt.Errorf("apikey: MemoryStore.Patch: %w", err)
		}
		values[0], ok = string(b), true
		return []bool{true}, nil
	})
	if err != nil || !ok {
		return StoredKey{}, false, err
	}
	return after, true, nil
}
