package apikey

import (
	"context"
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
	// byOwner selects by ReferenceID even when it is "", as List and
	// ListPage do (no key has no owner, so they find none).
	byOwner bool
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
	return m.page(ctx, "Search", f, after, limit)
}

// page is Search and ListPage: a page of the keys f selects and the
// cursor of the next.
func (m *Manager) page(ctx context.Context, op string, f Filter, after int64, limit int) (keys []*Key, next int64, err error) {
	if err := m.initialised(op); err != nil {
		return nil, 0, err
	}
	switch {
	case limit < 1 || limit > MaxPageSize:
		return nil, 0, invalidf("%s: limit %d is outside [1, %d]", op, limit, MaxPageSize)
	case after < 0:
		return nil, 0, invalidf("%s: cursor %d is negative", op, after)
	}
	list, err := m.store.search(ctx, f, after, limit)
	if err != nil {
		return nil, 0, err
	}
	if keys, err = toKeys(list); err != nil {
		return nil, 0, err
	}
	if len(keys) == limit {
		next = keys[len(keys)-1].ID
	}
	return keys, next, nil
}

// search is f as where clauses, so that the database filters and pages.
func (d *dbStore) search(ctx context.Context, f Filter, after int64, limit int) ([]*keystore.Key, error) {
	where := []core.Where{core.Gt("id", after)}
	if f.ReferenceID != "" || f.byOwner {
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
