package apikey

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

// storageStore keeps keys in a secondary storage: the key at
// prefix+"key:"+loc, loc being its location, which nothing moves; the
// location of each id at prefix+"id:"+id; with a keystore.Indexer, the locations
// of each owner in the set prefix+"ref:"+referenceId and all of them in
// prefix+"all". A key's location is the hash it was created with, or,
// when the storage shares owner limits, that hash after the {hash tag} of
// its owner, whose limits are at prefix+"owner:{"+keystore.Hash(referenceId)+"}".
// Every hash that opens a key at a location other than itself (one it was
// rerolled to, or the one it was created with, in a tagged location)
// points there from prefix+"to:"+hash.
type storageStore struct {
	s           driver.SecondaryStorage
	c           keystore.Claimer
	rerolls     bool             // c is keystore.Rerollable
	owners      bool             // c is keystore.OwnerSharing: keys are stored in their owner's hash tag
	ix          keystore.Indexer // nil: no listing
	creator     keystore.Creator // nil: an owner's first record is Set, racing another first
	prefix      string
	dropExpired bool             // WithDeleteExpiredOnVerify
	now         func() time.Time // the manager's clock, in ms
	locs        locations
}

func (st *storageStore) checkSchema(context.Context, bool) error { return nil } // no table

func (st *storageStore) recKey(loc string) string   { return st.prefix + "key:" + loc }
func (st *storageStore) idKey(id int64) string      { return st.prefix + "id:" + strconv.FormatInt(id, 10) }
func (st *storageStore) refSet(ref string) string   { return st.prefix + "ref:" + ref }
func (st *storageStore) allSet() string             { return st.prefix + "all" }
func (st *storageStore) toKey(hash string) string   { return st.prefix + "to:" + hash }
func (st *storageStore) ownerKey(tag string) string { return st.prefix + "owner:{" + tag + "}" }

// location is where a new key of the owner ref with the given hash is
// stored.
func (st *storageStore) location(hash, ref string) string {
	if !st.owners {
		return hash
	}
	return "{" + keystore.Hash(ref) + "}" + hash
}

// locations remembers where the keys verified are stored, by the hash
// presented. A key never moves and no other key ever has its hash, so what
// it remembers stays true until the key is deleted, and a claim there then
// finds nothing. It holds at most maxLocations hashes, forgetting them all
// when full.
type locations struct {
	m atomic.Pointer[sync.Map]
	n atomic.Int64
}

const maxLocations = 1 << 16

func (l *locations) reset() { l.m.Store(new(sync.Map)); l.n.Store(0) }

func (l *locations) get(hash string) (string, bool) {
	v, ok := l.m.Load().Load(hash)
	if !ok {
		return "", false
	}
	return v.(string), true
}

func (l *locations) put(hash, loc string) {
	if l.n.Add(1) > maxLocations {
		l.reset()
	}
	l.m.Load().Store(hash, loc)
}

func (l *locations) drop(hash string) { l.m.Load().Delete(hash) }

// errNoAnchors refuses an anchored refill in storage-only mode: the
// storage decides a claim in its own script (Lua on Redis), which has no
// time-zone database to find the anchor's instants, and the manager cannot
// give it the instant before the script has read the key.
func errNoAnchors(op string) error {
	return fmt.Errorf("apikey: %s: %w: an anchored refill (Refill.Anchor) needs database mode (apikey.New); a storage-only manager keeps interval refills only", op, core.ErrUnsupported)
}

func (st *storageStore) create(ctx context.Context, s *keystore.Key) error {
	if s.RefillAnchor != nil {
		return errNoAnchors("Create")
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("apikey: reading random bytes: %w", err)
	}
	// A random positive id below 2^53: the storage has no sequence that
	// never expires, and a Lua script reads JSON numbers as doubles.
	s.ID = int64(binary.BigEndian.Uint64(b[:])>>11) | 1
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	// The record before what leads to it: a failure midway leaves at
	// worst a record nothing opens.
	loc := st.location(s.Key, s.ReferenceID)
	if err := st.s.Set(ctx, st.recKey(loc), string(v), 0); err != nil {
		return err
	}
	if loc != s.Key {
		if err := st.s.Set(ctx, st.toKey(s.Key), loc, 0); err != nil {
			return err
		}
	}
	if err := st.s.Set(ctx, st.idKey(s.ID), loc, 0); err != nil {
		return err
	}
	if st.ix != nil {
		if err := st.ix.AddToSet(ctx, st.refSet(s.ReferenceID), loc); err != nil {
			return err
		}
		return st.ix.AddToSet(ctx, st.allSet(), loc)
	}
	return nil
}

// at reads the key stored at location loc; nil when there is none.
func (st *storageStore) at(ctx context.Context, loc string) (*keystore.Key, error) {
	return st.record(ctx, st.recKey(loc))
}

// record reads the record at storage key key; nil when there is none.
func (st *storageStore) record(ctx context.Context, key string) (*keystore.Key, error) {
	v, ok, err := st.s.Get(ctx, key)
	if err != nil || !ok {
		return nil, err
	}
	var s keystore.Key
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return nil, fmt.Errorf("apikey: stored record %s: %w", key, err)
	}
	return &s, nil
}

// locationOf is the location of key id.
func (st *storageStore) locationOf(ctx context.Context, id int64) (string, bool, error) {
	return st.s.Get(ctx, st.idKey(id))
}

func (st *storageStore) byID(ctx context.Context, id int64) (*keystore.Key, error) {
	_, s, err := st.located(ctx, id)
	return s, err
}

// located returns key id and its location; nil when no key has that id.
func (st *storageStore) located(ctx context.Context, id int64) (string, *keystore.Key, error) {
	loc, ok, err := st.locationOf(ctx, id)
	if err != nil || !ok {
		return "", nil, err
	}
	s, err := st.at(ctx, loc)
	return loc, s, err
}

func (st *storageStore) members(ctx context.Context, set, what string) ([]*keystore.Key, error) {
	if st.ix == nil {
		return nil, fmt.Errorf("apikey: %s: %w: the storage does not implement keystore.Indexer", what, core.ErrUnsupported)
	}
	locs, err := st.ix.SetMembers(ctx, set)
	if err != nil {
		return nil, err
	}
	out := make([]*keystore.Key, 0, len(locs))
	for _, loc := range locs {
		s, err := st.at(ctx, loc)
		if err != nil {
			return nil, err
		}
		if s != nil {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// search reads all the keys of f's owner, the only way a storage finds
// keys, and keeps those f selects: a storage has no query.
func (st *storageStore) search(ctx context.Context, f Filter, after int64, limit int) ([]*keystore.Key, error) {
	if f.ReferenceID == "" && !f.byOwner {
		return nil, fmt.Errorf("apikey: Search: %w: in storage-only mode keys are found by owner; set Filter.ReferenceID", core.ErrUnsupported)
	}
	list, err := st.members(ctx, st.refSet(f.ReferenceID), "List")
	if err != nil {
		return nil, err
	}
	list = slices.DeleteFunc(list, func(s *keystore.Key) bool { return s.ID <= after || !f.selects(s) })
	slices.SortFunc(list, func(a, b *keystore.Key) int { return cmp.Compare(a.ID, b.ID) })
	if limit > 0 {
		list = list[:min(len(list), limit)]
	}
	return list, nil
}

func (st *storageStore) update(ctx context.Context, id int64, f map[string]any) (*keystore.Key, error) {
	if a, ok := f["refillAnchor"]; ok {
		if a != nil {
			return nil, errNoAnchors("Update")
		}
		delete(f, "refillAnchor") // no record holds one
	}
	loc, ok, err := st.locationOf(ctx, id)
	if err != nil || !ok {
		return nil, err
	}
	after, ok, err := st.c.Patch(ctx, st.recKey(loc), f)
	if err != nil || !ok {
		return nil, err
	}
	return &after, nil
}

func (st *storageStore) delete(ctx context.Context, id int64) (bool, error) {
	loc, s, err := st.located(ctx, id)
	if err != nil || s == nil {
		return false, err
	}
	return true, st.remove(ctx, loc, s)
}

// remove deletes the key s stored at location loc, and then the pointers
// of the hashes it was rerolled to (which, the key gone, open nothing).
func (st *storageStore) remove(ctx context.Context, loc string, s *keystore.Key) error {
	if err := st.s.Delete(ctx, st.recKey(loc)); err != nil {
		return err
	}
	if err := st.s.Delete(ctx, st.idKey(s.ID)); err != nil {
		return err
	}
	if st.ix != nil {
		if err := st.ix.RemoveFromSet(ctx, st.refSet(s.ReferenceID), loc); err != nil {
			return err
		}
		if err := st.ix.RemoveFromSet(ctx, st.allSet(), loc); err != nil {
			return err
		}
	}
	for h := range s.RerolledUntil() {
		if h != loc {
			if err := st.s.Delete(ctx, st.toKey(h)); err != nil {
				return err
			}
		}
	}
	if s.Key != loc {
		return st.s.Delete(ctx, st.toKey(s.Key))
	}
	return nil
}

func (st *storageStore) deleteExpired(ctx context.Context, at time.Time) (int64, error) {
	now := at.UnixMilli()
	all, err := st.members(ctx, st.allSet(), "DeleteExpired")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, s := range all {
		if s.ExpiresAt != nil && *s.ExpiresAt <= now {
			loc, ok, err := st.locationOf(ctx, s.ID)
			if err != nil {
				return n, err
			}
			if !ok {
				continue // deleted meanwhile
			}
			if err := st.remove(ctx, loc, s); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
