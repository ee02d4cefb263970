package apikey

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// backend is where a Manager keeps its keys, behind every method of the
// Manager: the database ([New], dbKeys, with its optional cache) or a
// secondary storage alone ([NewStorageOnly], storeOnly). The Manager
// validates, decides what to report and tells the observer; the store
// reads and writes.
type backend interface {
	// verify checks the key whose hash is given, at now, and spends cost.
	// spend lists the named limits it spends, in name order.
	verify(ctx context.Context, hash string, now time.Time, cost int64, req *required, spend []keystore.LimitSpend) (Result, error)
	create(ctx context.Context, s *keystore.Key) error
	byID(ctx context.Context, id int64) (*keystore.Key, error)
	// list is an owner's keys in creation order; page those with ids above
	// after, in id order, at most limit.
	list(ctx context.Context, ref string) ([]*keystore.Key, error)
	page(ctx context.Context, ref string, after int64, limit int) ([]*keystore.Key, error)
	update(ctx context.Context, id int64, f map[string]any) (*keystore.Key, error)
	delete(ctx context.Context, id int64) (bool, error)
	deleteExpired(ctx context.Context, now time.Time) (int64, error)
	// reroll gives key id the hash that mk makes from its prefix, the old
	// one opening it for grace more; nil for an unknown id.
	reroll(ctx context.Context, id int64, mk newKey, now time.Time, grace time.Duration) (*keystore.Key, error)
	// setOwnerLimits makes cfg (Limits text, nil for none) an owner's
	// limits, and ownerLimits reads them with their counters.
	setOwnerLimits(ctx context.Context, ref string, cfg *string) error
	ownerLimits(ctx context.Context, ref string) (map[string]LimitUsage, error)
	// name is Event.Storage.
	name() string
}

// dbKeys is the database as a backend: the Manager's db* methods, which
// share its cache and its remembered keys.
type dbKeys struct{ m *Manager }

// verify decides on the clock's time at each attempt rather than now.
func (d dbKeys) verify(ctx context.Context, hash string, _ time.Time, cost int64, req *required, spend []keystore.LimitSpend) (Result, error) {
	if len(spend) > 0 {
		return d.m.verifyLimited(ctx, hash, cost, req, spend)
	}
	return d.m.verifyDB(ctx, hash, cost, req)
}

func (d dbKeys) create(ctx context.Context, s *keystore.Key) error { return d.m.dbCreate(ctx, s) }

func (d dbKeys) byID(ctx context.Context, id int64) (*keystore.Key, error) {
	s, err := d.m.dbFind(ctx, core.Eq("id", id))
	if err != nil || s == nil {
		return s, err
	}
	return s, d.m.dbAttachLimits(ctx, s)
}

func (d dbKeys) list(ctx context.Context, ref string) ([]*keystore.Key, error) {
	list, err := d.m.dbList(ctx, []core.Where{core.Eq("referenceId", ref)}, 0)
	if err != nil {
		return nil, err
	}
	return list, d.m.dbAttachLimits(ctx, list...)
}

func (d dbKeys) page(ctx context.Context, ref string, after int64, limit int) ([]*keystore.Key, error) {
	list, err := d.m.dbList(ctx, []core.Where{core.Eq("referenceId", ref), core.Gt("id", after)}, limit)
	if err != nil {
		return nil, err
	}
	return list, d.m.dbAttachLimits(ctx, list...)
}

func (d dbKeys) update(ctx context.Context, id int64, f map[string]any) (*keystore.Key, error) {
	return d.m.dbUpdate(ctx, id, f)
}

func (d dbKeys) delete(ctx context.Context, id int64) (bool, error) { return d.m.dbDelete(ctx, id) }

func (d dbKeys) deleteExpired(ctx context.Context, now time.Time) (int64, error) {
	return d.m.dbDeleteExpired(ctx, now)
}

func (d dbKeys) reroll(ctx context.Context, id int64, mk newKey, now time.Time, grace time.Duration) (*keystore.Key, error) {
	return d.m.dbReroll(ctx, id, mk, now, grace)
}

func (d dbKeys) name() string {
	if d.m.cache != nil {
		return "database+cache"
	}
	return "database"
}

// page is list, cut: a storage has no order to ask for.
func (st *storeOnly) page(ctx context.Context, ref string, after int64, limit int) ([]*keystore.Key, error) {
	list, err := st.list(ctx, ref)
	if err != nil {
		return nil, err
	}
	list = slices.DeleteFunc(list, func(s *keystore.Key) bool { return s.ID <= after })
	slices.SortFunc(list, func(a, b *keystore.Key) int { return cmp.Compare(a.ID, b.ID) })
	return list[:min(len(list), limit)], nil
}

func (st *storeOnly) name() string { return "storage" }

var (
	_ backend = dbKeys{}
	_ backend = (*storeOnly)(nil)
)
