package apikey

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// dbStore keeps keys in the database ([New]): the apikey table, and the
// optional rerolledKey and apikeyLimit tables. It owns the keys it
// remembers as the database last returned them (keys, [WithKeyStateCache]),
// from which a verification plans its guarded write without a read, and
// the shared cache of cached mode ([WithCache]). This file holds its
// schema check and its reads and changes; database_verify.go the
// verification, database_limits.go the named limits, database_reroll.go
// rerolling.
type dbStore struct {
	db          *core.DB
	now         func() time.Time // the manager's clock, in ms
	maxAttempts int
	dropExpired bool         // WithDeleteExpiredOnVerify
	keys        *keyCache    // nil when off
	cache       *sharedCache // nil without WithCache
	schema      *schemaCheck // shared with the views of In
	tx          bool         // a view bound to a caller's transaction (In): reads lock the key's row
}

// schemaCheck runs the start-up check of the apikey table once it has
// passed: a failure is returned and the next call tries again.
type schemaCheck struct {
	passed atomic.Bool
	turn   chan struct{} // holds a token while a check runs, so one runs at a time
	// noRerolls says why the rerolledKey table cannot be used (it is
	// missing, or lacks what the check requires); nil when it can.
	noRerolls atomic.Pointer[error]
	// noLimits says why the apikeyLimit table cannot be used; nil when it can.
	noLimits atomic.Pointer[error]
	// noRefills says why the apikeyRefill table cannot be used; nil when it can.
	noRefills atomic.Pointer[error]
}

// timeFields are the stored-key fields that the database keeps as times.
var timeFields = map[string]bool{"lastRefillAt": true, "lastRequest": true, "expiresAt": true, "createdAt": true, "updatedAt": true}

// checkSchema runs the check, one caller at a time; unless asked to run
// it again, a caller that waited for its turn finds it passed.
func (d *dbStore) checkSchema(ctx context.Context, again bool) error {
	if !again && d.schema.passed.Load() {
		return nil
	}
	select {
	case d.schema.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-d.schema.turn }()
	if !again && d.schema.passed.Load() {
		return nil
	}
	if err := d.db.CheckSchema(ctx, core.ModelAPIKey); err != nil {
		return err
	}
	// The rerolledKey table is optional: without it keys can be rerolled
	// only without a grace period, and verification never looks there.
	// So is the apikeyLimit table: without it no key has named limits;
	// and the apikeyRefill table: without it no refill is anchored.
	for model, why := range map[string]*atomic.Pointer[error]{core.ModelRerolledKey: &d.schema.noRerolls, core.ModelAPIKeyLimit: &d.schema.noLimits, core.ModelAPIKeyRefill: &d.schema.noRefills} {
		if _, ok := d.db.Schema().Table(model); !ok {
			err := fmt.Errorf("%w: the DB's schema has no %s model", core.ErrSchema, model)
			why.Store(&err)
			continue
		}
		switch err := d.db.CheckSchema(ctx, model); {
		case err == nil:
			why.Store(nil)
		case errors.Is(err, core.ErrSchema):
			why.Store(&err)
		default:
			return err
		}
	}
	d.schema.passed.Store(true)
	return nil
}

// create stores s and remembers it, so that even its first verification
// can skip the read.
func (d *dbStore) create(ctx context.Context, s *keystore.Key) error {
	if s.Limits == nil && s.RefillAnchor == nil {
		row, err := d.db.Create(ctx, core.ModelAPIKey, values(s))
		if err != nil {
			return err
		}
		*s = *fromRow(row)
		d.keys.put(s)
		return nil
	}
	if s.Limits != nil {
		if err := d.limitsUsable("Create"); err != nil {
			return err
		}
	}
	if s.RefillAnchor != nil {
		if err := d.refillsUsable("Create"); err != nil {
			return err
		}
	}
	// The key with its limits and its anchor together: a key without the
	// limits it was given would not be limited by them, one without its
	// anchor never refilled.
	limits, anchor := s.Limits, s.RefillAnchor
	err := d.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		row, err := tx.Create(ctx, core.ModelAPIKey, values(s))
		if err != nil {
			return err
		}
		created := fromRow(row)
		if limits != nil {
			if err := setLimitsText(ctx, tx, created.ID, limits); err != nil {
				return err
			}
		}
		if anchor != nil {
			if err := setAnchor(ctx, tx, created.ID, anchor); err != nil {
				return err
			}
		}
		*s = *created
		s.Limits, s.LimitCounts, s.RefillAnchor = limits, nil, anchor
		return nil
	})
	if err == nil {
		d.keys.put(s)
	}
	return err
}

// find reads the key that where matches; nil for none.
func (d *dbStore) find(ctx context.Context, where ...core.Where) (*keystore.Key, error) {
	findOne := d.db.FindOne
	if d.tx {
		findOne = d.db.FindOneForUpdate // see ratelimit's readRow
	}
	row, ok, err := findOne(ctx, core.ModelAPIKey, where...)
	if err != nil || !ok {
		return nil, err
	}
	s := fromRow(row)
	return s, d.attachAnchors(ctx, s) // after the row: see database_refill.go
}

// read reads the key that hash opens at now: the key with that hash, or
// the one an old hash of it still opens (rerolled true); nil for none.
func (d *dbStore) read(ctx context.Context, hash string, now time.Time) (s *keystore.Key, rerolled bool, err error) {
	if s, err = d.find(ctx, core.Eq("key", hash)); err != nil || s != nil {
		return s, false, err
	}
	if d.schema.noRerolls.Load() != nil {
		return nil, false, nil
	}
	row, ok, err := d.db.FindOne(ctx, core.ModelRerolledKey, core.Eq("key", hash), core.Gt("expiresAt", now))
	if err != nil || !ok {
		return nil, false, err
	}
	s, err = d.find(ctx, core.Eq("id", row.Int("keyId")))
	return s, s != nil, err
}

// findMany returns the matching keys in id order, at most limit (0: all).
func (d *dbStore) findMany(ctx context.Context, where []core.Where, limit int) ([]*keystore.Key, error) {
	rows, err := d.db.FindMany(ctx, core.ModelAPIKey, where, &core.FindOptions{SortBy: "id", Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]*keystore.Key, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, d.attachAnchors(ctx, out...)
}

func (d *dbStore) byID(ctx context.Context, id int64) (*keystore.Key, error) {
	s, err := d.find(ctx, core.Eq("id", id))
	if err != nil || s == nil {
		return s, err
	}
	return s, d.attachLimits(ctx, s)
}

func (d *dbStore) update(ctx context.Context, id int64, f map[string]any) (*keystore.Key, error) {
	set := make(map[string]any, len(f))
	limits, setLimits := f["limits"]
	anchorValue, setAnchor := f["refillAnchor"]
	for k, v := range f {
		if ms, ok := v.(int64); ok && timeFields[k] {
			v = time.UnixMilli(ms).UTC()
		}
		if k != "limits" && k != "refillAnchor" {
			set[k] = v
		}
	}
	if setLimits {
		if err := d.limitsUsable("Update"); err != nil {
			return nil, err
		}
	}
	var anchor *string
	if setAnchor {
		if err := d.checkSchema(ctx, false); err != nil {
			return nil, err
		}
		if text, ok := anchorValue.(string); ok {
			if err := d.refillsUsable("Update"); err != nil {
				return nil, err
			}
			anchor = &text
		} else if d.schema.noRefills.Load() != nil {
			setAnchor = false // no table, no anchor to remove
		}
	}
	var after *keystore.Key
	err := d.changing(ctx, "Update", id, func(ctx context.Context) error {
		if setAnchor {
			var limitsText *string
			if setLimits {
				text, _ := limits.(string) // nil, for none, reads as ""
				limitsText = &text
			}
			var err error
			after, err = d.updateAnchored(ctx, id, set, anchor, limitsText)
			return err
		}
		if !setLimits {
			row, ok, err := d.db.Update(ctx, core.ModelAPIKey, []core.Where{core.Eq("id", id)}, set)
			if ok {
				after = fromRow(row)
			}
			return err
		}
		text, _ := limits.(string) // nil, for none, reads as ""
		return d.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
			row, ok, err := tx.Update(ctx, core.ModelAPIKey, []core.Where{core.Eq("id", id)}, set)
			if err != nil || !ok {
				return err
			}
			after = fromRow(row)
			return setLimitsText(ctx, tx, id, &text)
		})
	})
	if err != nil || after == nil {
		return nil, err
	}
	if !setAnchor {
		if err := d.attachAnchors(ctx, after); err != nil {
			return nil, err
		}
	}
	d.keys.put(after) // the new settings, so that the next verification's write is planned on them
	return after, d.attachLimits(ctx, after)
}

func (d *dbStore) delete(ctx context.Context, id int64) (bool, error) {
	var deleted bool
	err := d.changing(ctx, "Delete", id, func(ctx context.Context) error {
		var err error
		deleted, err = d.db.Delete(ctx, core.ModelAPIKey, core.Eq("id", id))
		return err
	})
	if err != nil || !deleted {
		return deleted, err
	}
	// Old hashes and named limits of a deleted key serve nothing (the row
	// is gone); deleting them only tidies.
	if err := d.forgetRerolled(ctx, core.Eq("keyId", id)); err != nil {
		return true, err
	}
	return true, d.forgetLimits(ctx, id)
}

func (d *dbStore) deleteExpired(ctx context.Context, now time.Time) (int64, error) {
	// NULL satisfies no comparison, so keys without expiry are never matched.
	expired := core.Lte("expiresAt", now)
	var hashes []string
	var ids []int64
	if err := d.checkSchema(ctx, false); err != nil {
		return 0, err
	}
	if d.cache != nil || d.schema.noLimits.Load() == nil {
		list, err := d.findMany(ctx, []core.Where{expired}, 0)
		if err != nil {
			return 0, err
		}
		for _, s := range list {
			hashes, ids = append(hashes, s.Key), append(ids, s.ID)
		}
	}
	var n int64
	err := d.cache.around(ctx, "DeleteExpired", hashes, func(ctx context.Context) error {
		var err error
		n, err = d.db.DeleteMany(ctx, core.ModelAPIKey, expired)
		return err
	})
	if err != nil {
		return n, err
	}
	if err := d.forgetRerolled(ctx, core.Lte("expiresAt", now)); err != nil {
		return n, err
	}
	return n, d.forgetLimits(ctx, ids...)
}

// changing runs the database write of a change to key id, renewing the
// key's generation in the shared cache around it in cached mode.
func (d *dbStore) changing(ctx context.Context, op string, id int64, write func(ctx context.Context) error) error {
	if d.cache == nil {
		return write(ctx)
	}
	s, err := d.find(ctx, core.Eq("id", id))
	if err != nil || s == nil {
		return err // no key: nothing to change, nothing cached to honour
	}
	return d.cache.around(ctx, op, []string{s.Key}, write)
}

// forgetRerolled deletes the old hashes matching where, when the table
// exists.
func (d *dbStore) forgetRerolled(ctx context.Context, where core.Where) error {
	if err := d.checkSchema(ctx, false); err != nil || d.schema.noRerolls.Load() != nil {
		return err // whether the table exists is known once the schema is checked
	}
	_, err := d.db.DeleteMany(ctx, core.ModelRerolledKey, where)
	return err
}

// anchorMarked reports whether s is marked as anchored, and so needs its
// anchor (RefillAnchor, "" when it has none) to be decided on.
func anchorMarked(s *keystore.Key) bool {
	return s.RefillInterval == nil && s.RefillAmount != nil && *s.RefillAmount > 0
}
