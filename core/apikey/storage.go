package apikey

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Claimer is the capability that storage-only mode ([NewStorageOnly])
// requires of a [core.SecondaryStorage]: changing one stored key atomically
// inside the storage, so that concurrent verifications on several servers
// can never both spend the last unit. The value at a storage key is the
// JSON encoding of a [StoredKey]. An in-process implementation is
// [MemoryStore]; a Redis one runs each method as one Lua script.
type Claimer interface {
	// Claim reads the stored key at key and, in one atomic step, decides
	// and applies the verification exactly as [ApplyClaim] does, writing
	// the key back (keeping its expiry) when it changed. A missing key
	// answers Found == false.
	Claim(ctx context.Context, key string, req ClaimRequest) (ClaimResult, error)
	// Patch sets fields of the stored key at key in one atomic step: each
	// map key is a JSON field name of [StoredKey] and each value an int64,
	// bool, string or nil (JSON null); other fields, counters included,
	// keep their current values. It returns the key after the change, and
	// ok == false when no key is stored there.
	Patch(ctx context.Context, key string, fields map[string]any) (after StoredKey, ok bool, err error)
}

// Rerollable is the capability storage-only mode needs of a [Claimer] to
// reroll keys ([Manager.Reroll]): a Claim that honours
// [ClaimRequest.Hash] (rule 0 of [ApplyClaim]). Its method only declares
// it. Without it Reroll fails with [core.ErrUnsupported]: a Claim that
// ignored the hash would let a rerolled key's old plaintext work for ever.
type Rerollable interface {
	Claimer
	// ClaimChecksHash declares that Claim applies rule 0.
	ClaimChecksHash()
}

// Indexer is an optional storage capability: unordered sets of strings.
// Storage-only mode uses it to list keys by owner and to find expired keys;
// without it [Manager.List] and [Manager.DeleteExpired] fail with
// [core.ErrUnsupported] in that mode.
type Indexer interface {
	// AddToSet adds member to the set, creating it; adding twice is a no-op.
	AddToSet(ctx context.Context, set, member string) error
	// RemoveFromSet removes member; a missing member is not an error.
	RemoveFromSet(ctx context.Context, set, member string) error
	// SetMembers returns the members in any order.
	SetMembers(ctx context.Context, set string) ([]string, error)
}

// storeOnly keeps keys in a secondary storage: the key at prefix+"key:"+h,
// h being the hash it was created with (its location, which a reroll does
// not move), the location of each id at prefix+"id:"+id, and with an
// Indexer the locations of each owner in the set prefix+"ref:"+referenceId
// and all of them in prefix+"all". A hash a key was rerolled to points to
// its location from prefix+"to:"+hash.
type storeOnly struct {
	s           core.SecondaryStorage
	c           Claimer
	rerolls     bool    // c is Rerollable
	ix          Indexer // nil: no listing
	prefix      string
	dropExpired bool // WithDeleteExpiredOnVerify
}

func (st *storeOnly) recKey(hash string) string { return st.prefix + "key:" + hash }
func (st *storeOnly) idKey(id int64) string     { return st.prefix + "id:" + strconv.FormatInt(id, 10) }
func (st *storeOnly) refSet(ref string) string  { return st.prefix + "ref:" + ref }
func (st *storeOnly) allSet() string            { return st.prefix + "all" }
func (st *storeOnly) toKey(hash string) string  { return st.prefix + "to:" + hash }

func (st *storeOnly) verify(ctx context.Context, hash string, at time.Time, cost int64, req *required, spend []LimitSpend) (Result, error) {
	now := at.UnixMilli()
	if err := ctx.Err(); err != nil {
		return Result{}, err // before the claim: nothing spent
	}
	claim := ClaimRequest{Now: now, Cost: cost, Hash: hash, Limits: spend}
	if req != nil {
		claim.RequireAll, claim.RequireAny = req.all, req.any
	}
	loc := hash
	res, err := st.claim(ctx, loc, claim)
	if err != nil {
		return Result{}, err
	}
	if !res.Found && st.rerolls {
		// A hash the key was rerolled to, or an old one whose grace is
		// over (the claim's rule 0 then refuses it).
		to, ok, err := st.s.Get(ctx, st.toKey(hash))
		if err != nil {
			return Result{}, err
		}
		if ok && to != hash {
			loc = to
			if res, err = st.claim(ctx, loc, claim); err != nil {
				return Result{}, err
			}
		}
	}
	if !res.Found {
		return denied(CodeInvalid, 0, nil), nil
	}
	k, err := res.Key.toKey()
	if err != nil {
		return Result{}, err
	}
	if res.Code == CodeExpired && st.dropExpired {
		if err := st.remove(ctx, loc, &res.Key); err != nil {
			return Result{}, err
		}
	}
	if res.Code != "" {
		r := denied(res.Code, res.TryAgainIn, k)
		r.Limit = res.Limit
		return r, nil
	}
	return allowed(k), nil
}

// claim claims the key stored at location loc.
func (st *storeOnly) claim(ctx context.Context, loc string, claim ClaimRequest) (ClaimResult, error) {
	res, err := st.c.Claim(ctx, st.recKey(loc), claim)
	if err != nil {
		if err := afterWrite(ctx, "claim", err); errors.Is(err, ErrOutcomeUnknown) {
			return ClaimResult{}, err
		}
		return ClaimResult{}, fmt.Errorf("apikey: claim: %w", err)
	}
	return res, nil
}

func (st *storeOnly) create(ctx context.Context, s *StoredKey) error {
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
	if err := st.s.Set(ctx, st.recKey(s.Key), string(v), 0); err != nil {
		return err
	}
	if err := st.s.Set(ctx, st.idKey(s.ID), s.Key, 0); err != nil {
		return err
	}
	if st.ix != nil {
		if err := st.ix.AddToSet(ctx, st.refSet(s.ReferenceID), s.Key); err != nil {
			return err
		}
		return st.ix.AddToSet(ctx, st.allSet(), s.Key)
	}
	return nil
}

func (st *storeOnly) byHash(ctx context.Context, hash string) (*StoredKey, error) {
	v, ok, err := st.s.Get(ctx, st.recKey(hash))
	if err != nil || !ok {
		return nil, err
	}
	var s StoredKey
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return nil, fmt.Errorf("apikey: stored key %s: %w", st.recKey(hash), err)
	}
	return &s, nil
}

func (st *storeOnly) hashOf(ctx context.Context, id int64) (string, bool, error) {
	return st.s.Get(ctx, st.idKey(id))
}

func (st *storeOnly) byID(ctx context.Context, id int64) (*StoredKey, error) {
	_, s, err := st.located(ctx, id)
	return s, err
}

// located returns key id and its location (the hash it is stored under);
// nil when no key has that id.
func (st *storeOnly) located(ctx context.Context, id int64) (string, *StoredKey, error) {
	loc, ok, err := st.hashOf(ctx, id)
	if err != nil || !ok {
		return "", nil, err
	}
	s, err := st.byHash(ctx, loc)
	return loc, s, err
}

func (st *storeOnly) members(ctx context.Context, set, what string) ([]*StoredKey, error) {
	if st.ix == nil {
		return nil, fmt.Errorf("apikey: %s: %w: the storage does not implement apikey.Indexer", what, core.ErrUnsupported)
	}
	hashes, err := st.ix.SetMembers(ctx, set)
	if err != nil {
		return nil, err
	}
	out := make([]*StoredKey, 0, len(hashes))
	for _, h := range hashes {
		s, err := st.byHash(ctx, h)
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

func (st *storeOnly) list(ctx context.Context, ref string) ([]*StoredKey, error) {
	return st.members(ctx, st.refSet(ref), "List")
}

func (st *storeOnly) update(ctx context.Context, id int64, f map[string]any) (*StoredKey, error) {
	hash, ok, err := st.hashOf(ctx, id)
	if err != nil || !ok {
		return nil, err
	}
	after, ok, err := st.c.Patch(ctx, st.recKey(hash), f)
	if err != nil || !ok {
		return nil, err
	}
	return &after, nil
}

func (st *storeOnly) delete(ctx context.Context, id int64) (bool, error) {
	loc, s, err := st.located(ctx, id)
	if err != nil || s == nil {
		return false, err
	}
	return true, st.remove(ctx, loc, s)
}

// remove deletes the key s stored at location loc, and then the pointers
// of the hashes it was rerolled to (which, the key gone, open nothing).
func (st *storeOnly) remove(ctx context.Context, loc string, s *StoredKey) error {
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
	for h := range s.rerolledUntil() {
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

func (st *storeOnly) deleteExpired(ctx context.Context, at time.Time) (int64, error) {
	now := at.UnixMilli()
	all, err := st.members(ctx, st.allSet(), "DeleteExpired")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, s := range all {
		if s.ExpiresAt != nil && *s.ExpiresAt <= now {
			loc, ok, err := st.hashOf(ctx, s.ID)
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
