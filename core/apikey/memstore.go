package apikey

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// MemoryStore is an in-process [driver.SecondaryStorage] that also implements
// [Claimer] (and [Rerollable]) and [Indexer], for storage-only mode in tests
// and single-process services. One mutex guards everything, which makes each claim atomic.
type MemoryStore struct {
	mu     sync.Mutex
	clock  func() time.Time
	values map[string]memValue
	sets   map[string]map[string]struct{}
}

type memValue struct {
	v       string
	expires time.Time // zero: never
}

// NewMemoryStore returns an empty store. clock drives expiry; nil means
// time.Now.
func NewMemoryStore(clock func() time.Time) *MemoryStore {
	if clock == nil {
		clock = time.Now
	}
	return &MemoryStore{clock: clock, values: map[string]memValue{}, sets: map[string]map[string]struct{}{}}
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
// which it does by reading the owner's record under the same lock.
func (s *MemoryStore) ClaimSharesOwnerLimits() {}

// get returns a live value; the caller holds mu.
func (s *MemoryStore) get(key string) (memValue, bool) {
	v, ok := s.values[key]
	if ok && !v.expires.IsZero() && !s.clock().Before(v.expires) {
		delete(s.values, key)
		return memValue{}, false
	}
	return v, ok
}

// Get returns the value at key.
func (s *MemoryStore) Get(ctx context.Context, key string) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.get(key)
	return v.v, ok, nil
}

// Set stores value at key; ttl 0 means no expiry.
func (s *MemoryStore) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ttl < 0 {
		return fmt.Errorf("apikey: MemoryStore.Set: %w: negative ttl %v", core.ErrInvalid, ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := memValue{v: value}
	if ttl > 0 {
		v.expires = s.clock().Add(ttl)
	}
	s.values[key] = v
	return nil
}

// Delete removes key.
func (s *MemoryStore) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.values, key)
	return nil
}

// Increment adds by to the counter at key, creating it with expiry ttl;
// an existing counter keeps its expiry.
func (s *MemoryStore) Increment(ctx context.Context, key string, by int64, ttl time.Duration) (driver.Counter, error) {
	if err := ctx.Err(); err != nil {
		return driver.Counter{}, err
	}
	if ttl <= 0 {
		return driver.Counter{}, fmt.Errorf("apikey: MemoryStore.Increment: %w: ttl %v must be positive", core.ErrInvalid, ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.get(key)
	var n int64
	if ok {
		var err error
		if n, err = strconv.ParseInt(v.v, 10, 64); err != nil {
			return driver.Counter{}, fmt.Errorf("apikey: MemoryStore.Increment: %q holds %q, not a counter", key, v.v)
		}
	} else {
		v.expires = s.clock().Add(ttl)
	}
	n += by
	v.v = fmt.Sprint(n)
	s.values[key] = v
	var left time.Duration // 0: a value set without expiry keeps none
	if !v.expires.IsZero() {
		left = v.expires.Sub(s.clock())
	}
	return driver.Counter{Value: n, TTL: left}, nil
}

// Claim applies [ApplyClaim] to the key stored at key, and to the owner's
// record at req.Owner, under the store's lock.
func (s *MemoryStore) Claim(ctx context.Context, key string, req ClaimRequest) (ClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return ClaimResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.get(key)
	if !ok {
		return ClaimResult{}, nil
	}
	var k StoredKey
	if err := json.Unmarshal([]byte(v.v), &k); err != nil {
		return ClaimResult{}, fmt.Errorf("apikey: MemoryStore.Claim: %q: %w", key, err)
	}
	var owner *StoredKey
	var ov memValue
	if req.Owner != "" && len(req.Limits) > 0 {
		var found bool
		if ov, found = s.get(req.Owner); found {
			owner = new(StoredKey)
			if err := json.Unmarshal([]byte(ov.v), owner); err != nil {
				return ClaimResult{}, fmt.Errorf("apikey: MemoryStore.Claim: %q: %w", req.Owner, err)
			}
		}
	}
	res := ApplyClaim(&k, owner, req)
	if res.Code == "" && req.Cost > 0 {
		b, err := json.Marshal(&k)
		if err != nil {
			return ClaimResult{}, err
		}
		if owner != nil { // rewritten as is when none of its limits was spent
			ob, err := json.Marshal(owner)
			if err != nil {
				return ClaimResult{}, err
			}
			ov.v = string(ob)
			s.values[req.Owner] = ov
		}
		v.v = string(b)
		s.values[key] = v
	}
	return res, nil
}

// Patch merges fields into the key stored at key, under the store's lock.
func (s *MemoryStore) Patch(ctx context.Context, key string, fields map[string]any) (StoredKey, bool, error) {
	if err := ctx.Err(); err != nil {
		return StoredKey{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.get(key)
	if !ok {
		return StoredKey{}, false, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v.v), &obj); err != nil {
		return StoredKey{}, false, fmt.Errorf("apikey: MemoryStore.Patch: %q: %w", key, err)
	}
	for f, val := range fields {
		b, err := json.Marshal(val)
		if err != nil {
			return StoredKey{}, false, fmt.Errorf("apikey: MemoryStore.Patch: field %q: %w", f, err)
		}
		obj[f] = b
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return StoredKey{}, false, err
	}
	var after StoredKey
	if err := json.Unmarshal(b, &after); err != nil {
		return StoredKey{}, false, fmt.Errorf("apikey: MemoryStore.Patch: %w", err)
	}
	v.v = string(b)
	s.values[key] = v
	return after, true, nil
}

// AddToSet adds member to set.
func (s *MemoryStore) AddToSet(ctx context.Context, set, member string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sets[set] == nil {
		s.sets[set] = map[string]struct{}{}
	}
	s.sets[set][member] = struct{}{}
	return nil
}

// RemoveFromSet removes member from set.
func (s *MemoryStore) RemoveFromSet(ctx context.Context, set, member string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sets[set], member)
	if len(s.sets[set]) == 0 {
		delete(s.sets, set)
	}
	return nil
}

// SetMembers returns the members of set.
func (s *MemoryStore) SetMembers(ctx context.Context, set string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.sets[set]))
	for m := range s.sets[set] {
		out = append(out, m)
	}
	return out, nil
}
