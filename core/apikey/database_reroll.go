package apikey

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// errRerollRaced reports a reroll whose key changed its hash between the
// read and the write: another reroll came first.
var errRerollRaced = errors.New("apikey: the key was rerolled meanwhile")

// reroll moves the key's hash in one transaction: the old hash goes into
// the rerolledKey table with the end of its grace, and the key's row takes
// the new hash, guarded on still having the old one. Verifications in
// flight with the old hash either wrote before the transaction, or miss
// (their write is guarded on the hash they read) and read again, finding
// the row through the rerolledKey table; the counters never move.
func (d *dbStore) reroll(ctx context.Context, id int64, mk newKey, now time.Time, grace time.Duration) (*keystore.Key, error) {
	if grace > 0 {
		if p := d.schema.noRerolls.Load(); p != nil {
			return nil, fmt.Errorf("apikey: Reroll: a grace period needs the %s table: %w", core.ModelRerolledKey, *p)
		}
	}
	for attempt := 0; attempt < d.maxAttempts; attempt++ {
		s, err := d.find(ctx, core.Eq("id", id))
		if err != nil || s == nil {
			return nil, err
		}
		var after *keystore.Key
		hash, start := mk(deref(s.Prefix))
		err = d.cache.around(ctx, "Reroll", []string{s.Key}, func(ctx context.Context) error {
			return d.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
				if grace > 0 {
					if _, err := tx.Create(ctx, core.ModelRerolledKey, map[string]any{
						"key": s.Key, "keyId": id, "expiresAt": now.Add(grace), "createdAt": now,
					}); err != nil {
						return err
					}
				}
				row, ok, err := tx.Update(ctx, core.ModelAPIKey, []core.Where{core.Eq("id", id), core.Eq("key", s.Key)},
					map[string]any{"key": hash, "start": start, "updatedAt": now})
				if err != nil {
					return err
				}
				if !ok {
					return errRerollRaced
				}
				after = withAnchor(row, s)
				return nil
			})
		})
		switch {
		case errors.Is(err, errRerollRaced), errors.Is(err, core.ErrContention):
			continue // rolled back: read the key as it now is
		case err != nil:
			return nil, err
		}
		d.keys.drop(s.Key)
		d.keys.put(after)
		return after, nil
	}
	return nil, fmt.Errorf("apikey: Reroll: %w: the key was rerolled by others %d times meanwhile", core.ErrContention, d.maxAttempts)
}
