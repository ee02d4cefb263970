package apikey

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// UpdateParams lists the changes [Manager.Update] makes; a nil or zero
// field is left as it is.
type UpdateParams struct {
	Name      *string
	Enabled   *bool
	ExpiresAt *time.Time // the zero time removes the expiry
	Remaining *int64     // a new quota
	Unlimited bool       // remove the quota (and its refill)
	Refill    *Refill    // the zero Refill removes the refill
	RateLimit *RateLimit
	// Metadata and Permissions replace the stored ones when not nil; an
	// empty map clears them.
	Metadata    map[string]any
	Permissions map[string][]string
	// ResetRateLimit starts the key's rate-limit window afresh: its
	// request count goes to 0, so its next request opens a new window.
	ResetRateLimit bool
	// RestartRefill restarts the refill schedule at the time of the
	// update: the next refill comes one refill interval later, or, for a
	// refill anchored to the calendar, at the anchor's next instant.
	RestartRefill bool
	// Limits, when not nil, become the key's named limits (an empty map
	// removes them all). A limit that stays keeps its counter, under its
	// new max and window.
	Limits map[string]NamedLimit
}

// fields validates u and returns the changes as stored-key fields (JSON
// names; times in epoch ms; nil for NULL).
func (u UpdateParams) fields() (map[string]any, error) {
	f := map[string]any{}
	if u.Name != nil {
		if err := checkText("Name", *u.Name); err != nil {
			return nil, err
		}
		if len([]rune(*u.Name)) > MaxNameLength {
			return nil, invalidf("Name is longer than %d characters", MaxNameLength)
		}
		f["name"] = nullIfEmpty(*u.Name)
	}
	if u.Enabled != nil {
		f["enabled"] = *u.Enabled
	}
	if u.ExpiresAt != nil {
		f["expiresAt"] = nil
		if !u.ExpiresAt.IsZero() {
			f["expiresAt"] = u.ExpiresAt.UnixMilli()
		}
	}
	switch {
	case u.Unlimited && (u.Remaining != nil || (u.Refill != nil && *u.Refill != Refill{})):
		return nil, invalidf("Unlimited cannot be combined with Remaining or a Refill")
	case u.Unlimited:
		f["remaining"], f["refillInterval"], f["refillAmount"], f["refillAnchor"] = nil, nil, nil, nil
	case u.Remaining != nil && *u.Remaining < 0:
		return nil, invalidf("Remaining %d is negative", *u.Remaining)
	case u.Remaining != nil:
		f["remaining"] = *u.Remaining
	}
	if u.Refill != nil {
		if err := checkRefill(*u.Refill); err != nil {
			return nil, err
		}
		f["refillInterval"], f["refillAmount"], f["refillAnchor"] = nil, nil, nil
		if *u.Refill != (Refill{}) {
			iv, amount, anchor := refillColumns(*u.Refill)
			f["refillInterval"], f["refillAmount"], f["refillAnchor"] = nilIfNil(iv), *amount, nilIfNil(anchor)
		}
	}
	if u.RateLimit != nil {
		if err := checkRateLimit(*u.RateLimit); err != nil {
			return nil, err
		}
		var s keystore.Key
		setRateLimit(&s, *u.RateLimit)
		f["rateLimitEnabled"], f["rateLimitTimeWindow"], f["rateLimitMax"] = s.RateLimitEnabled, nilIfNil(s.RateLimitTimeWindow), nilIfNil(s.RateLimitMax)
	}
	if u.Metadata != nil {
		s, err := encodeJSON("Metadata", u.Metadata)
		if err != nil {
			return nil, err
		}
		f["metadata"] = nilIfNil(s)
	}
	if u.Permissions != nil {
		if err := checkPermissions(u.Permissions); err != nil {
			return nil, err
		}
		s, err := encodeJSON("Permissions", u.Permissions)
		if err != nil {
			return nil, err
		}
		f["permissions"] = nilIfNil(s)
	}
	if u.Limits != nil {
		if err := checkLimits(u.Limits); err != nil {
			return nil, err
		}
		f["limits"] = nilIfNil(configText(u.Limits))
	}
	if u.ResetRateLimit {
		f["requestCount"], f["lastRequest"] = int64(0), nil
	}
	if len(f) == 0 && !u.RestartRefill {
		return nil, invalidf("Update: nothing to change")
	}
	return f, nil
}

// nilIfNil turns a nil pointer into an untyped nil and dereferences others.
func nilIfNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Get returns the key with the given id, or an error wrapping
// [core.ErrNotFound].
func (m *Manager) Get(ctx context.Context, id int64) (*Key, error) {
	if err := m.initialised("Get"); err != nil {
		return nil, err
	}
	s, err := m.store.byID(ctx, id)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("apikey: key %d: %w", id, core.ErrNotFound)
	}
	return toKey(s)
}

// List returns the keys of an owner, in creation order.
func (m *Manager) List(ctx context.Context, referenceID string) ([]*Key, error) {
	if err := m.initialised("List"); err != nil {
		return nil, err
	}
	list, err := m.store.search(ctx, Filter{ReferenceID: referenceID, byOwner: true}, 0, 0)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(list, func(a, b *keystore.Key) int { return cmp.Compare(a.CreatedAt, b.CreatedAt) })
	return toKeys(list)
}

// Update changes a key and returns it as stored. An unknown id fails with
// [core.ErrNotFound]; invalid parameters with [core.ErrInvalid], before any
// write. Once Update returns without error, every verification sees the
// change, in cached mode too (see [WithCache]); when the cache cannot be
// made to forget the key as it was, Update returns an error instead.
func (m *Manager) Update(ctx context.Context, id int64, u UpdateParams) (*Key, error) {
	start := time.Now()
	if err := m.initialised("Update"); err != nil {
		return nil, err
	}
	f, err := u.fields()
	if err != nil {
		return nil, err
	}
	now := m.now().UnixMilli()
	f["updatedAt"] = now
	if u.RestartRefill {
		f["lastRefillAt"] = now
	}
	s, err := m.store.update(ctx, id, f)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("apikey: key %d: %w", id, core.ErrNotFound)
	}
	k, err := toKey(s)
	if err != nil {
		return nil, err
	}
	m.changed(ctx, start, Event{Kind: Updated, Key: k})
	return k, nil
}

// Delete removes a key and reports whether it existed. Once Delete returns
// without error, no verification accepts the key, in cached mode too (see
// [WithCache]). When the cache cannot be made to forget the key it returns
// an error: before the deletion, with false; after it, with true.
func (m *Manager) Delete(ctx context.Context, id int64) (bool, error) {
	start := time.Now()
	if err := m.initialised("Delete"); err != nil {
		return false, err
	}
	deleted, err := m.store.delete(ctx, id)
	if deleted && err == nil {
		m.changed(ctx, start, Event{Kind: Deleted, KeyID: id})
	}
	return deleted, err
}

// DeleteExpired removes every key whose expiry has passed and returns how
// many. Verification never deletes keys; call this on a schedule instead.
func (m *Manager) DeleteExpired(ctx context.Context) (int64, error) {
	start := time.Now()
	if err := m.initialised("DeleteExpired"); err != nil {
		return 0, err
	}
	n, err := m.store.deleteExpired(ctx, m.now())
	if n > 0 {
		m.changed(ctx, start, Event{Kind: ExpiredDeleted, Count: n})
	}
	return n, err
}

// ListPage returns up to limit keys of an owner whose ids are above after,
// in id order, and the cursor of the next page: the last id returned when
// the page is full, 0 when there is no more. Start with after = 0. limit
// must be in [1, MaxPageSize]. Keys created while paging appear on a later
// page when their ids are above the cursor.
func (m *Manager) ListPage(ctx context.Context, referenceID string, after int64, limit int) (keys []*Key, next int64, err error) {
	return m.page(ctx, "ListPage", Filter{ReferenceID: referenceID, byOwner: true}, after, limit)
}
