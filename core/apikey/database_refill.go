package apikey

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// The database keeps the anchor of a refill anchored to the calendar
// (Refill.Anchor) in a row of the optional apikeyRefill table, by key id;
// the key's own row keeps refillAmount, with refillInterval NULL, so that
// Better Auth sees no refill it could apply a second time. That pair, a
// positive refillAmount without refillInterval, is the mark of an anchored
// key (anchorMarked): only such a key's reads look the anchor up, after
// reading the row.
//
// A verification stays one guarded write on the key's row. The anchor
// turns into the interval rule at the verification's time
// (keystore.Anchor.Interval), and the write of a marked key is guarded on
// lastRefillAt as read (refillSnapshot): of concurrent verifications that
// planned the refill of one anchor instant, the first moves lastRefillAt
// and the others miss and read again, so the refill happens once and no
// charge is lost; a decrement leaves lastRefillAt alone, so decrements do
// not make one another miss. The anchor itself is in another table, which
// the write cannot check: instead, every change of a key's anchor moves
// its lastRefillAt (shiftedRefill), in the transaction that changes the
// anchor, so a write planned under an anchor no longer stored misses too.
// Since a verification reads the row before the anchor, an anchor it read
// is the stored one whenever its write matches.

// refillsUsable fails, naming the table and how to make it, when the
// apikeyRefill table cannot be used.
func (d *dbStore) refillsUsable(op string) error {
	if p := d.schema.noRefills.Load(); p != nil {
		return fmt.Errorf("apikey: %s: an anchored refill (Refill.Anchor) needs the %s table (create it with core.DB.CreateTables, or with the migration sluicegen writes): %w", op, core.ModelAPIKeyRefill, *p)
	}
	return nil
}

// attachAnchors gives each marked key among keys its anchor: the text of
// its apikeyRefill row, or "" for a key without one (or without the
// table), which then has no refill, as for Better Auth.
func (d *dbStore) attachAnchors(ctx context.Context, keys ...*keystore.Key) error {
	var ids []any
	for _, s := range keys {
		if anchorMarked(s) {
			s.RefillAnchor = ptr("")
			ids = append(ids, s.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := d.checkSchema(ctx, false); err != nil || d.schema.noRefills.Load() != nil {
		return err // whether the table exists is known once the schema is checked
	}
	var rows []core.Row
	if len(ids) == 1 {
		row, ok, err := d.db.FindOne(ctx, core.ModelAPIKeyRefill, core.Eq("keyId", ids[0]))
		if err != nil {
			return err
		}
		if ok {
			rows = append(rows, row)
		}
	} else {
		var err error
		if rows, err = d.db.FindMany(ctx, core.ModelAPIKeyRefill, []core.Where{core.In("keyId", ids...)}, nil); err != nil {
			return err
		}
	}
	text := make(map[int64]string, len(rows))
	for _, r := range rows {
		a := keystore.Anchor{Day: int(r.Int("day")), TimeOfDay: time.Duration(r.Int("timeOfDay")) * time.Millisecond}
		b, err := anchorText(a, r.Text("location"))
		if err != nil {
			return fmt.Errorf("apikey: key %d: its %s row: %w", r.Int("keyId"), core.ModelAPIKeyRefill, err)
		}
		text[r.Int("keyId")] = b
	}
	for _, s := range keys {
		if t, ok := text[s.ID]; ok && anchorMarked(s) {
			s.RefillAnchor = &t
		}
	}
	return nil
}

// anchorText is the stored text of a, whose location is named zone.
func anchorText(a keystore.Anchor, zone string) (string, error) {
	var back keystore.Anchor
	if err := back.UnmarshalText(fmt.Appendf(nil, "%d %d %s", a.Day, a.TimeOfDay.Milliseconds(), zone)); err != nil {
		return "", err
	}
	b, err := back.MarshalText()
	return string(b), err
}

// anchorRow is the apikeyRefill row of key id for the stored text.
func anchorRow(id int64, text string) (map[string]any, error) {
	var a keystore.Anchor
	if err := a.UnmarshalText([]byte(text)); err != nil {
		return nil, err
	}
	return map[string]any{"keyId": id, "day": int64(a.Day), "timeOfDay": a.TimeOfDay.Milliseconds(), "location": a.Location.String()}, nil
}

// setAnchor makes text (nil or "": none) the anchor of key id, inside tx.
func setAnchor(ctx context.Context, tx *core.DB, id int64, text *string) error {
	if _, err := tx.Delete(ctx, core.ModelAPIKeyRefill, core.Eq("keyId", id)); err != nil {
		return err
	}
	if text == nil || *text == "" {
		return nil
	}
	row, err := anchorRow(id, *text)
	if err != nil {
		return err
	}
	_, err = tx.Create(ctx, core.ModelAPIKeyRefill, row)
	return err
}

// refillSnapshot appends to where the guard of a marked key's write:
// lastRefillAt as read (a millisecond's range, since times are compared
// by ranges, never by equality), NULL when it was.
func refillSnapshot(where []core.Where, s *keystore.Key) []core.Where {
	if s.LastRefillAt == nil {
		return append(where, core.IsNull("lastRefillAt"))
	}
	at := time.UnixMilli(*s.LastRefillAt).UTC()
	return append(where, core.Gte("lastRefillAt", at), core.Lt("lastRefillAt", at.Add(time.Millisecond)))
}

// shiftedRefill is the lastRefillAt that a change of anchor to a writes
// (epoch ms) on a key whose last refill (or creation, never refilled) was
// at last: one millisecond
// earlier, or later when last is itself an instant of a. Under a, every
// later verification decides as it would on last (a refill is due after
// an anchor instant t exactly when last < t, and the only instant that
// one millisecond could cross is last itself), while the stored value
// differs from what any verification planned on (the stored value, or
// NULL), so those in flight miss.
func shiftedRefill(a keystore.Anchor, last int64) int64 {
	y := last - 1
	if a.Latest(time.UnixMilli(last)).UnixMilli() == last {
		y = last + 1
	}
	return y
}

// updateAnchored is update for a change that sets or removes an anchor
// (anchor: the new text, nil for none), and the named limits when limits
// is not nil (their Limits text): in one transaction, the key's row,
// read first so that the row is locked and its lastRefillAt known, then
// its apikeyRefill row. Setting an anchor moves lastRefillAt
// (shiftedRefill, or restarts it at the update's time when set names
// lastRefillAt), and needs the key to have a quota.
func (d *dbStore) updateAnchored(ctx context.Context, id int64, set map[string]any, anchor, limits *string) (*keystore.Key, error) {
	var after *keystore.Key
	err := d.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		row, ok, err := tx.FindOneForUpdate(ctx, core.ModelAPIKey, core.Eq("id", id))
		if err != nil || !ok {
			return err
		}
		before := fromRow(row)
		if anchor != nil {
			if v, ok := set["remaining"]; ok && v == nil || !ok && before.Remaining == nil {
				return invalidf("Refill needs a quota: key %d has none (set Remaining)", id)
			}
			var a keystore.Anchor
			if err := a.UnmarshalText([]byte(*anchor)); err != nil {
				return err
			}
			switch restart, ok := set["lastRefillAt"].(time.Time); {
			case ok && before.LastRefillAt != nil && restart.UnixMilli() == *before.LastRefillAt:
				set["lastRefillAt"] = restart.Add(time.Millisecond)
			case !ok:
				last := before.CreatedAt
				if before.LastRefillAt != nil {
					last = *before.LastRefillAt
				}
				set["lastRefillAt"] = time.UnixMilli(shiftedRefill(a, last)).UTC()
			}
		}
		row, ok, err = tx.Update(ctx, core.ModelAPIKey, []core.Where{core.Eq("id", id)}, set)
		if err != nil || !ok {
			return err
		}
		after = fromRow(row)
		after.RefillAnchor = anchor
		if anchorMarked(after) && anchor == nil {
			after.RefillAnchor = ptr("")
		}
		if limits != nil {
			if err := setLimitsText(ctx, tx, id, limits); err != nil {
				return err
			}
		}
		return setAnchor(ctx, tx, id, anchor)
	})
	return after, err
}

// withAnchor is the key that the write of a verification planned on s
// returned as row: s's anchor holds, since the write matched (see above).
func withAnchor(row core.Row, s *keystore.Key) *keystore.Key {
	after := fromRow(row)
	if anchorMarked(after) {
		after.RefillAnchor = s.RefillAnchor
	}
	return after
}
