package apikey

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// timeFields are the stored-key fields that the database keeps as times.
var timeFields = map[string]bool{"lastRefillAt": true, "lastRequest": true, "expiresAt": true, "createdAt": true, "updatedAt": true}

func (m *Manager) dbCreate(ctx context.Context, s *keystore.Key) error {
	if s.Limits == nil {
		row, err := m.db.Create(ctx, core.ModelAPIKey, values(s))
		if err != nil {
			return err
		}
		*s = *fromRow(row)
		return nil
	}
	if err := m.limitsUsable("Create"); err != nil {
		return err
	}
	// The key and its limits together: a key without the limits it was
	// given would not be limited by them.
	limits := s.Limits
	return m.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		row, err := tx.Create(ctx, core.ModelAPIKey, values(s))
		if err != nil {
			return err
		}
		created := fromRow(row)
		if err := dbSetLimits(ctx, tx, created.ID, limits); err != nil {
			return err
		}
		*s = *created
		s.Limits, s.LimitCounts = limits, nil
		return nil
	})
}

func (m *Manager) dbFind(ctx context.Context, where ...core.Where) (*keystore.Key, error) {
	row, ok, err := m.db.FindOne(ctx, core.ModelAPIKey, where...)
	if err != nil || !ok {
		return nil, err
	}
	return fromRow(row), nil
}

// dbList returns the matching keys in id order, at most limit (0: all).
func (m *Manager) dbList(ctx context.Context, where []core.Where, limit int) ([]*keystore.Key, error) {
	rows, err := m.db.FindMany(ctx, core.ModelAPIKey, where, &core.FindOptions{SortBy: "id", Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]*keystore.Key, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, nil
}

func (m *Manager) dbUpdate(ctx context.Context, id int64, f map[string]any) (*keystore.Key, error) {
	set := make(map[string]any, len(f))
	limits, setLimits := f["limits"]
	for k, v := range f {
		if ms, ok := v.(int64); ok && timeFields[k] {
			v = time.UnixMilli(ms).UTC()
		}
		if k != "limits" {
			set[k] = v
		}
	}
	if setLimits {
		if err := m.limitsUsable("Update"); err != nil {
			return nil, err
		}
	}
	var after *keystore.Key
	err := m.cachedChange(ctx, "Update", id, func(ctx context.Context) error {
		if !setLimits {
			row, ok, err := m.db.Update(ctx, core.ModelAPIKey, []core.Where{core.Eq("id", id)}, set)
			if ok {
				after = fromRow(row)
			}
			return err
		}
		text, _ := limits.(string) // nil, for none, reads as ""
		return m.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
			row, ok, err := tx.Update(ctx, core.ModelAPIKey, []core.Where{core.Eq("id", id)}, set)
			if err != nil || !ok {
				return err
			}
			after = fromRow(row)
			return dbSetLimits(ctx, tx, id, &text)
		})
	})
	if err != nil || after == nil {
		return nil, err
	}
	m.keys.put(after) // the new settings, so that the next verification's write is planned on them
	return after, m.dbAttachLimits(ctx, after)
}

func (m *Manager) dbDelete(ctx context.Context, id int64) (bool, error) {
	var deleted bool
	err := m.cachedChange(ctx, "Delete", id, func(ctx context.Context) error {
		var err error
		deleted, err = m.db.Delete(ctx, core.ModelAPIKey, core.Eq("id", id))
		return err
	})
	if err != nil || !deleted {
		return deleted, err
	}
	// Old hashes and named limits of a deleted key serve nothing (the row
	// is gone); deleting them only tidies.
	if err := m.dbForgetRerolled(ctx, core.Eq("keyId", id)); err != nil {
		return true, err
	}
	return true, m.dbForgetLimits(ctx, id)
}

func (m *Manager) dbDeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	// NULL satisfies no comparison, so keys without expiry are never matched.
	expired := core.Lte("expiresAt", now)
	var hashes []string
	var ids []int64
	if err := m.ready(ctx, "DeleteExpired"); err != nil {
		return 0, err
	}
	if m.cache != nil || m.schema.noLimits.Load() == nil {
		list, err := m.dbList(ctx, []core.Where{expired}, 0)
		if err != nil {
			return 0, err
		}
		for _, s := range list {
			hashes, ids = append(hashes, s.Key), append(ids, s.ID)
		}
	}
	var n int64
	err := m.invalidateAround(ctx, "DeleteExpired", hashes, func(ctx context.Context) error {
		var err error
		n, err = m.db.DeleteMany(ctx, core.ModelAPIKey, expired)
		return err
	})
	if err != nil {
		return n, err
	}
	if err := m.dbForgetRerolled(ctx, core.Lte("expiresAt", now)); err != nil {
		return n, err
	}
	return n, m.dbForgetLimits(ctx, ids...)
}

// The cached mode keeps, for each key hash, an entry (the key as read from
// the database, tagged with a generation) and the key's current
// generation, a random token that every change through the manager renews
// before and after its database write. An entry counts only while its tag
// is the current generation, so an entry filled from a read made before a
// change, however late it reaches the cache, is never used after the
// change returns: the renewal after the write has replaced the generation
// it was read under. Without a generation stored (never changed, or
// expired) the generation is "".
//
// A generation must outlive every entry tagged with an older one. Entries
// live cacheTTL, and a verification does not fill the cache when more than
// cacheTTL has passed since it read the generation; so a generation kept
// for 2·cacheTTL, plus a margin for the fill's trip to the storage, does.

// cacheEntry is the value of a cached key.
type cacheEntry struct {
	Gen string       `json:"gen"`
	Key keystore.Key `json:"key"`
}

// generation is the generation a verification read, and when.
type generation struct {
	token string
	known bool // false: reading it failed, so nothing may be cached under it
	at    time.Time
}

// generationMargin covers a fill's trip to the storage and the difference
// between this process's clock and the storage's.
const generationMargin = time.Minute

// invalidateTimeout bounds the renewal of a generation after a database
// write, which goes on when the caller's context ends: leaving it undone
// would let a cached entry outlive the change that the database holds.
const invalidateTimeout = 10 * time.Second

// cacheKey is where the cached mode keeps a key, by hash; genKey is where
// it keeps the key's generation.
func (m *Manager) cacheKey(hash string) string { return m.o.prefix + "key:" + hash }
func (m *Manager) genKey(hash string) string   { return m.o.prefix + "gen:" + hash }

// generation reads the current generation of a key. A storage that fails
// is no reason to fail the verification: the database is the truth, and
// the entry is then neither used nor filled.
func (m *Manager) generation(ctx context.Context, hash string) generation {
	at := m.o.clock()
	v, ok, err := m.cache.Get(ctx, m.genKey(hash))
	if err != nil {
		return generation{}
	}
	if !ok {
		v = ""
	}
	return generation{token: v, known: true, at: at}
}

// cached returns the cached key if it was cached under gen, or nil. A
// cache that fails or holds garbage is treated as a miss.
func (m *Manager) cached(ctx context.Context, hash string, gen generation) *keystore.Key {
	if !gen.known {
		return nil
	}
	v, ok, err := m.cache.Get(ctx, m.cacheKey(hash))
	if err != nil || !ok {
		return nil
	}
	var e cacheEntry
	if json.Unmarshal([]byte(v), &e) != nil || e.Key.Key != hash || e.Gen != gen.token {
		return nil
	}
	return &e.Key
}

// fill caches s, read from the database after gen was read. Failing to
// cache only costs later reads.
func (m *Manager) fill(ctx context.Context, s *keystore.Key, gen generation) {
	if m.cache == nil || !gen.known || m.o.clock().Sub(gen.at) > m.cacheTTL {
		return // too late: gen may have expired, and with it the proof that s is stale
	}
	if b, err := json.Marshal(cacheEntry{Gen: gen.token, Key: *s}); err == nil {
		_ = m.cache.Set(ctx, m.cacheKey(s.Key), string(b), m.cacheTTL)
	}
}

// uncache drops a cached key that the database no longer holds or that a
// verification deleted as expired. It is only tidying: such an entry can
// never be answered, since a cached denial is confirmed from the database.
func (m *Manager) uncache(ctx context.Context, hash string) {
	if m.cache != nil && hash != "" {
		_ = m.cache.Delete(ctx, m.cacheKey(hash))
	}
}

// renew gives each key a new generation, so that no entry cached before
// is used again, and then drops the entries (only tidying: a failure there
// is harmless).
func (m *Manager) renew(ctx context.Context, hashes []string) error {
	ttl := 2*m.cacheTTL + generationMargin
	for _, h := range hashes {
		if err := m.cache.Set(ctx, m.genKey(h), rand.Text(), ttl); err != nil {
			return err
		}
	}
	for _, h := range hashes {
		_ = m.cache.Delete(ctx, m.cacheKey(h))
	}
	return nil
}

// cachedChange runs the database write of a change to key id, renewing
// the key's generation around it in cached mode.
func (m *Manager) cachedChange(ctx context.Context, op string, id int64, write func(ctx context.Context) error) error {
	if m.cache == nil {
		return write(ctx)
	}
	s, err := m.dbFind(ctx, core.Eq("id", id))
	if err != nil || s == nil {
		return err // no key: nothing to change, nothing cached to honour
	}
	return m.invalidateAround(ctx, op, []string{s.Key}, write)
}

// invalidateAround renews the generations of the keys with the given
// hashes, runs the database write, and renews them again. The first
// renewal keeps entries cached before the change from being used should
// the second one never happen; the second refuses the entries that
// verifications read during the write and cache later. The second runs
// even when the write fails, since a failed write may still have committed.
func (m *Manager) invalidateAround(ctx context.Context, op string, hashes []string, write func(ctx context.Context) error) error {
	if m.cache == nil || len(hashes) == 0 {
		return write(ctx)
	}
	if err := m.renew(ctx, hashes); err != nil {
		return fmt.Errorf("apikey: %s: nothing changed: the cache refused to invalidate the key: %w", op, err)
	}
	werr := write(ctx)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), invalidateTimeout)
	defer cancel()
	if err := m.renew(actx, hashes); err != nil {
		if werr != nil {
			return errors.Join(werr, err)
		}
		return fmt.Errorf("apikey: %s: the change is written, but the cache refused to invalidate the key, "+
			"which verifications may see as it was for up to %v: %w", op, m.cacheTTL, err)
	}
	return werr
}
