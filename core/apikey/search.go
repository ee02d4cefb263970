package apikey

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// Filter selects the keys [Manager.Search] returns. Its zero value selects
// every key; each field set narrows the selection.
type Filter struct {
	ReferenceID string // the owner's keys only
	Prefix      string // keys made with this prefix only
	Enabled     *bool  // enabled (true) or disabled (false) keys only
	// ExpiresBefore keeps the keys with an expiry before it (expired ones
	// included); keys that never expire are left out. Zero: any expiry.
	ExpiresBefore time.Time
}

// Search returns up to limit keys that f selects, whose ids are above
// after, in id order, and the cursor of the next page: the last id
// returned when the page is full, 0 when there is no more, as
// [Manager.ListPage]. limit must be in [1, MaxPageSize].
//
// On a database the filter runs in the query, across every owner. In
// storage-only mode keys are found through their owner, so f.ReferenceID
// is required there (without it the error wraps [core.ErrUnsupported]), and
// the storage must implement [keystore.Indexer].
func (m *Manager) Search(ctx context.Context, f Filter, after int64, limit int) (keys []*Key, next int64, err error) {
	if err := m.initialised("Search"); err != nil {
		return nil, 0, err
	}
	switch {
	case limit < 1 || limit > MaxPageSize:
		return nil, 0, invalidf("Search: limit %d is outside [1, %d]", limit, MaxPageSize)
	case after < 0:
		return nil, 0, invalidf("Search: cursor %d is negative", after)
	}
	var list []*keystore.Key
	switch st := m.store.(type) {
	case *dbStore:
		list, err = st.search(ctx, f, after, limit)
	case *storageStore:
		if f.ReferenceID == "" {
			return nil, 0, fmt.Errorf("apikey: Search: %w: in storage-only mode keys are found by owner; set Filter.ReferenceID", core.ErrUnsupported)
		}
		list, err = st.list(ctx, f.ReferenceID, after, 0)
		list = slices.DeleteFunc(list, func(s *keystore.Key) bool { return !f.selects(s) })
		list = list[:min(len(list), limit)]
	}
	if err != nil {
		return nil, 0, err
	}
	keys = make([]*Key, 0, len(list))
	for _, s := range list {
		k, err := toKey(s)
		if err != nil {
			return nil, 0, err
		}
		keys = append(keys, k)
	}
	if len(keys) == limit {
		next = keys[len(keys)-1].ID
	}
	return keys, next, nil
}

// search is f as where clauses, so the database filters and pages.
func (d *dbStore) search(ctx context.Context, f Filter, after int64, limit int) ([]*keystore.Key, error) {
	where := []core.Where{core.Gt("id", after)}
	if f.ReferenceID != "" {
		where = append(where, core.Eq("referenceId", f.ReferenceID))
	}
	if f.Prefix != "" {
		where = append(where, core.Eq("prefix", f.Prefix))
	}
	if f.Enabled != nil {
		where = append(where, core.Eq("enabled", *f.Enabled))
	}
	if !f.ExpiresBefore.IsZero() {
		where = append(where, core.IsNotNull("expiresAt"), core.Lt("expiresAt", f.ExpiresBefore.UTC().Truncate(time.Millisecond)))
	}
	list, err := d.findMany(ctx, where, limit)
	if err != nil {
		return nil, err
	}
	return list, d.attachLimits(ctx, list...)
}

// selects is f applied to a stored key, for storages that cannot query.
func (f Filter) selects(s *keystore.Key) bool {
	switch {
	case f.Prefix != "" && deref(s.Prefix) != f.Prefix:
		return false
	case f.Enabled != nil && s.Enabled != *f.Enabled:
		return false
	case !f.ExpiresBefore.IsZero() && (s.ExpiresAt == nil || *s.ExpiresAt >= f.ExpiresBefore.UnixMilli()):
		return false
	}
	return true
}
