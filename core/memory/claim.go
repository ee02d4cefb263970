package memory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

var (
	_ keystore.Rerollable   = (*Storage)(nil)
	_ keystore.OwnerSharing = (*Storage)(nil)
	_ keystore.Indexer      = (*Storage)(nil)
	_ keystore.Creator      = (*Storage)(nil)
)

// ClaimChecksHash declares that Claim applies rule 0 of [keystore.Apply],
// which it does by calling it.
func (s *Storage) ClaimChecksHash() {}

// ClaimSharesOwnerLimits declares that Claim applies [keystore.Request.Owner],
// which it does by reading the owner's record in the same update.
func (s *Storage) ClaimSharesOwnerLimits() {}

// Claim applies [keystore.Apply] to the key stored at key, and to the owner's
// record at req.Owner, in one atomic update.
func (s *Storage) Claim(ctx context.Context, key string, req keystore.Request) (keystore.Result, error) {
	keys := []string{key}
	if req.Owner != "" && req.Owner != key && len(req.Limits) > 0 {
		keys = append(keys, req.Owner)
	}
	var res keystore.Result
	err := s.Update(ctx, keys, func(values []string, found []bool) ([]bool, error) {
		if !found[0] {
			return nil, nil
		}
		var k keystore.Key
		if err := json.Unmarshal([]byte(values[0]), &k); err != nil {
			return nil, fmt.Errorf("memory: Storage.Claim: %q: %w", key, err)
		}
		var owner *keystore.Key
		if len(keys) > 1 && found[1] {
			owner = new(keystore.Key)
			if err := json.Unmarshal([]byte(values[1]), owner); err != nil {
				return nil, fmt.Errorf("memory: Storage.Claim: %q: %w", req.Owner, err)
			}
		}
		res = keystore.Apply(&k, owner, req)
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
		return keystore.Result{}, err
	}
	return res, nil
}

// Patch merges fields into the key stored at key, in one atomic update.
func (s *Storage) Patch(ctx context.Context, key string, fields map[string]any) (keystore.Key, bool, error) {
	var (
		after keystore.Key
		ok    bool
	)
	err := s.Update(ctx, []string{key}, func(values []string, found []bool) ([]bool, error) {
		if !found[0] {
			return nil, nil
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(values[0]), &obj); err != nil {
			return nil, fmt.Errorf("memory: Storage.Patch: %q: %w", key, err)
		}
		for f, val := range fields {
			b, err := json.Marshal(val)
			if err != nil {
				return nil, fmt.Errorf("memory: Storage.Patch: field %q: %w", f, err)
			}
			obj[f] = b
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &after); err != nil {
			return nil, fmt.Errorf("memory: Storage.Patch: %w", err)
		}
		values[0], ok = string(b), true
		return []bool{true}, nil
	})
	if err != nil || !ok {
		return keystore.Key{}, false, err
	}
	return after, true, nil
}

// Create stores value at key, without expiry, only when no live value is
// there, in one atomic update: the [keystore.Creator] that an owner's first
// SetOwnerLimits uses.
func (s *Storage) Create(ctx context.Context, key, value string) (bool, error) {
	created := false
	err := s.Update(ctx, []string{key}, func(values []string, found []bool) ([]bool, error) {
		if found[0] {
			return nil, nil
		}
		values[0], created = value, true
		return []bool{true}, nil
	})
	return created, err
}
