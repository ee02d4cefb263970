package apikey

import (
	"context"
	"encoding/json"
	"time"

	"github.com/sluice-go/sluice/core"
)

// timeFields are the stored-key fields that the database keeps as times.
var timeFields = map[string]bool{"lastRefillAt": true, "lastRequest": true, "expiresAt": true, "createdAt": true, "updatedAt": true}

func (m *Manager) dbCreate(ctx context.Context, s *StoredKey) error {
	row, err := m.db.Create(ctx, core.ModelAPIKey, s.values())
	if err != nil {
		return err
	}
	*s = *fromRow(row)
	return nil
}

func (m *Manager) dbFind(ctx context.Context, where ...core.Where) (*StoredKey, error) {
	row, ok, err := m.db.FindOne(ctx, core.ModelAPIKey, where...)
	if err != nil || !ok {
		return nil, err
	}
	return fromRow(row), nil
}

func (m *Manager) dbList(ctx context.Context, where ...core.Where) ([]*StoredKey, error) {
	rows, err := m.db.FindMany(ctx, core.ModelAPIKey, where, &core.FindOptions{SortBy: "id"})
	if err != nil {
		return nil, err
	}
	out := make([]*StoredKey, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, nil
}

func (m *Manager) dbUpdate(ctx context.Context, id int64, f map[string]any) (*StoredKey, error) {
	set := make(map[string]any, len(f))
	for k, v := range f {
		if ms, ok := v.(int64); ok && timeFields[k] {
			v = time.UnixMilli(ms).UTC()
		}
		set[k] = v
	}
	row, ok, err := m.db.Update(ctx, core.ModelAPIKey, []core.Where{core.Eq("id", id)}, set)
	if err != nil || !ok {
		return nil, err
	}
	s := fromRow(row)
	m.uncache(ctx, s.Key)
	return s, nil
}

func (m *Manager) dbDelete(ctx context.Context, id int64) (bool, error) {
	var hash string
	if m.cache != nil {
		s, err := m.dbFind(ctx, core.Eq("id", id))
		if err != nil || s == nil {
			return false, err
		}
		hash = s.Key
	}
	ok, err := m.db.Delete(ctx, core.ModelAPIKey, core.Eq("id", id))
	if ok {
		m.uncache(ctx, hash)
	}
	return ok, err
}

func (m *Manager) dbDeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	// NULL satisfies no comparison, so keys without expiry are never matched.
	expired := core.Lte("expiresAt", now)
	var cached []*StoredKey
	if m.cache != nil {
		var err error
		if cached, err = m.dbList(ctx, expired); err != nil {
			return 0, err
		}
	}
	n, err := m.db.DeleteMany(ctx, core.ModelAPIKey, expired)
	for _, s := range cached {
		m.uncache(ctx, s.Key)
	}
	return n, err
}

// cacheKey is where the cached mode keeps a key, by hash.
func (m *Manager) cacheKey(hash string) string { return m.o.prefix + "key:" + hash }

// cached returns the cached key, or nil on a miss. A cache that fails or
// holds garbage is treated as a miss: the database is the source of truth.
func (m *Manager) cached(ctx context.Context, hash string) *StoredKey {
	v, ok, err := m.cache.Get(ctx, m.cacheKey(hash))
	if err != nil || !ok {
		return nil
	}
	var s StoredKey
	if json.Unmarshal([]byte(v), &s) != nil || s.Key != hash {
		return nil
	}
	return &s
}

// recache stores s in the cache. Failing to cache only costs later reads.
func (m *Manager) recache(ctx context.Context, s *StoredKey) {
	if m.cache == nil {
		return
	}
	if b, err := json.Marshal(s); err == nil {
		_ = m.cache.Set(ctx, m.cacheKey(s.Key), string(b), m.cacheTTL)
	}
}

// uncache drops a cached key. A failure leaves a stale entry, which the
// guarded write and the confirmation of denials make harmless.
func (m *Manager) uncache(ctx context.Context, hash string) {
	if m.cache != nil && hash != "" {
		_ = m.cache.Delete(ctx, m.cacheKey(hash))
	}
}
