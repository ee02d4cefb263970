package apikey

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// The database keeps each named limit of a key in a row of the apikeyLimit
// table, with its counter. A verification that names limits reads the key
// and those rows, decides, and writes them in one transaction: the key's
// guarded write first, then each limit's, in row-key order (the key's
// limits by name, then its owner's), so that concurrent verifications lock
// the rows in one order and wait rather than deadlock. Each write is guarded as the key's is, so a row changed since
// it was read makes the write miss; then the transaction rolls back,
// spending nothing, and the verification reads again.

// errLimitRaced reports a guarded write that matched nothing inside the
// transaction of a verification with named limits.
var errLimitRaced = errors.New("apikey: a guarded write of a verification with named limits lost a race")

// limitsUsable fails, naming the table, when the apikeyLimit table cannot be
// used.
func (d *dbStore) limitsUsable(op string) error {
	if p := d.schema.noLimits.Load(); p != nil {
		return fmt.Errorf("apikey: %s: named limits need the %s table: %w", op, core.ModelAPIKeyLimit, *p)
	}
	return nil
}

// verifyLimited is verify for a verification that names limits, when the
// table exists (without it no key has a named limit). It decides on a
// read, never on a remembered key, and bypasses the cache.
func (d *dbStore) verifyLimited(ctx context.Context, hash string, cost int64, req *required, spend []keystore.LimitSpend) (Result, error) {
	for attempt := 0; attempt < d.maxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		now := d.now()
		s, _, err := d.read(ctx, hash, now)
		if err != nil {
			return Result{}, err
		}
		if s == nil {
			d.keys.drop(hash)
			return invalid(), nil
		}
		lims := keyLimitRows(s, spend)
		rows, err := d.limitRows(ctx, lims)
		if err != nil {
			return Result{}, err
		}
		rowLimits(s, lims, rows, false)
		owner := new(keystore.Key)
		rowLimits(owner, lims, rows, true)
		p := keystore.Decide(s, owner, req.claim(now.UnixMilli(), cost, spend))
		if p.Code != "" || cost == 0 {
			return d.answerRead(ctx, s, hash, p, now)
		}
		var after *keystore.Key
		err = d.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
			b := requests.Get().(*requestBuf)
			row, ok, err := tx.IncrementOne(ctx, consumeRequest(s, newGuardValues(s), p, req, now, cost, b))
			b.release()
			if err != nil {
				return err
			}
			if !ok {
				return errLimitRaced
			}
			after = withAnchor(row, s)
			for i, l := range lims {
				r, present := rows[l.row]
				if !present || l.Cost == 0 {
					continue
				}
				row, ok, err := tx.IncrementOne(ctx, limitRequest(l, r, p.Opens&(1<<i) != 0, now))
				if err != nil {
					return err
				}
				if !ok {
					return errLimitRaced
				}
				rows[l.row] = row
			}
			return nil
		})
		switch {
		case errors.Is(err, errLimitRaced), errors.Is(err, core.ErrContention):
			continue // rolled back: read again
		case err != nil:
			return Result{}, afterWrite(ctx, "verify", err)
		}
		d.keys.put(after)
		// The cached copy, if any, is now behind: a check of cost 0,
		// answered from the cache alone, would see the key as it was.
		d.cache.drop(ctx, after.Key)
		rowLimits(after, lims, rows, false)
		k, err := toKey(after)
		if err != nil {
			return Result{}, err
		}
		return allowed(k), nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return Result{}, fmt.Errorf("apikey: verify: %w: the guarded writes lost the race %d times", core.ErrContention, d.maxAttempts)
}

// limitRequest is the guarded write of one named limit, whose row r was
// read: it opens a new window (only when the one read has ended, so of
// concurrent openers only the first matches) or adds to the open one while
// it has room, and only while the limit's max and window are those read.
func limitRequest(l limitRow, r core.Row, open bool, now time.Time) core.IncrementRequest {
	ms := now.UnixMilli()
	c, _ := rowLimit(r)
	req := core.IncrementRequest{
		Model: core.ModelAPIKeyLimit,
		Where: []core.Where{core.Eq("key", l.row), core.Eq("max", c.Max), core.Eq("window", c.Window)},
	}
	if open {
		req.Where = append(req.Where, core.Lte("windowStart", ms-c.Window))
		req.Set = map[string]any{"count": l.Cost, "windowStart": ms}
	} else {
		req.Where = append(req.Where, core.Gt("windowStart", ms-c.Window), core.Lte("count", c.Max-l.Cost))
		req.Increment = map[string]int64{"count": l.Cost}
	}
	return req
}

// limitRow is a named limit that a verification spends, of the key or of
// its owner, with the unique key of its row.
type limitRow struct {
	keystore.LimitSpend
	owner bool
	row   string
}

// keyLimitRows lists what spend spends of the key s and of its owner: the
// key's limits, then its owner's, the order of their row keys, in which
// the transaction locks them, and the order of keystore.Plan.Opens.
func keyLimitRows(s *keystore.Key, spend []keystore.LimitSpend) []limitRow {
	lims := make([]limitRow, 2*len(spend))
	owner := keystore.Hash(s.ReferenceID)
	for i, sp := range spend {
		lims[i] = limitRow{LimitSpend: sp, row: limitRowKey(s.ID, sp.Name)}
		lims[len(spend)+i] = limitRow{LimitSpend: sp, owner: true, row: ownerRowKey(owner, sp.Name)}
	}
	return lims
}

// rowLimit is a named limit's row as stored-key limit and counter.
func rowLimit(r core.Row) (keystore.LimitConfig, keystore.LimitCount) {
	return keystore.LimitConfig{Max: r.Int("max"), Window: r.Int("window")}, keystore.LimitCount{Count: r.Int("count"), Start: r.Int("windowStart")}
}

// limitRows reads the rows of lims, by row key.
func (d *dbStore) limitRows(ctx context.Context, lims []limitRow) (map[string]core.Row, error) {
	keys := make([]any, len(lims))
	for i, l := range lims {
		keys[i] = l.row
	}
	rows, err := d.db.FindMany(ctx, core.ModelAPIKeyLimit, []core.Where{core.In("key", keys...)}, nil)
	if err != nil {
		return nil, err
	}
	out := make(map[string]core.Row, len(rows))
	for _, r := range rows {
		out[r.Text("key")] = r
	}
	return out, nil
}

// rowLimits gives k the named limits, with their counters, that rows
// holds of those of lims that are the owner's (owner true) or the key's
// own, as a storage keeps them in a record.
func rowLimits(k *keystore.Key, lims []limitRow, rows map[string]core.Row, owner bool) {
	cfg, counts := map[string]keystore.LimitConfig{}, map[string]keystore.LimitCount{}
	for _, l := range lims {
		if r, ok := rows[l.row]; ok && l.owner == owner {
			cfg[l.Name], counts[l.Name] = rowLimit(r)
		}
	}
	k.SetLimitConfigs(cfg)
	k.SetLimitCounters(counts)
}

// attachLimits reads the named limits of the keys and sets them.
func (d *dbStore) attachLimits(ctx context.Context, keys ...*keystore.Key) error {
	if len(keys) == 0 {
		return nil
	}
	if err := d.checkSchema(ctx, false); err != nil || d.schema.noLimits.Load() != nil {
		return err // whether the table exists is known once the schema is checked
	}
	ids := make([]any, len(keys))
	for i, s := range keys {
		ids[i] = s.ID
	}
	rows, err := d.db.FindMany(ctx, core.ModelAPIKeyLimit, []core.Where{core.In("keyId", ids...)}, nil)
	if err != nil {
		return err
	}
	cfg, counts := map[int64]map[string]keystore.LimitConfig{}, map[int64]map[string]keystore.LimitCount{}
	for _, r := range rows {
		id, name := r.Int("keyId"), r.Text("name")
		if cfg[id] == nil {
			cfg[id], counts[id] = map[string]keystore.LimitConfig{}, map[string]keystore.LimitCount{}
		}
		cfg[id][name], counts[id][name] = rowLimit(r)
	}
	for _, s := range keys {
		s.SetLimitConfigs(cfg[s.ID])
		s.SetLimitCounters(counts[s.ID])
	}
	return nil
}

// setLimitsText makes the named limits of key id, inside tx, exactly those
// of the Limits text cfg.
func setLimitsText(ctx context.Context, tx *core.DB, id int64, cfg *string) error {
	return replaceLimits(ctx, tx, core.Eq("keyId", id), func(name string) map[string]any {
		return map[string]any{"key": limitRowKey(id, name), "keyId": id}
	}, (&keystore.Key{Limits: cfg}).LimitConfigs())
}

// replaceLimits makes the named limits that owned matches, inside tx,
// exactly want: it deletes the others, changes the max and window of those
// that stay (keeping their counters) and creates the new ones, with the
// fields newRow gives besides name, max and window.
func replaceLimits(ctx context.Context, tx *core.DB, owned core.Where, newRow func(name string) map[string]any, want map[string]keystore.LimitConfig) error {
	rows, err := tx.FindMany(ctx, core.ModelAPIKeyLimit, []core.Where{owned}, nil)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, r := range rows {
		name := r.Text("name")
		l, keep := want[name]
		switch {
		case !keep:
			if _, err := tx.Delete(ctx, core.ModelAPIKeyLimit, core.Eq("id", r.Int("id"))); err != nil {
				return err
			}
		case l.Max != r.Int("max") || l.Window != r.Int("window"):
			if _, _, err := tx.Update(ctx, core.ModelAPIKeyLimit, []core.Where{core.Eq("id", r.Int("id"))},
				map[string]any{"max": l.Max, "window": l.Window}); err != nil {
				return err
			}
		}
		have[name] = true
	}
	names := make([]string, 0, len(want))
	for name := range want {
		if !have[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		l := want[name]
		row := newRow(name)
		row["name"], row["max"], row["window"] = name, l.Max, l.Window
		if _, err := tx.Create(ctx, core.ModelAPIKeyLimit, row); err != nil {
			return err
		}
	}
	return nil
}

// forgetLimits deletes the named limits of the keys, when the table
// exists.
func (d *dbStore) forgetLimits(ctx context.Context, ids ...int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := d.checkSchema(ctx, false); err != nil || d.schema.noLimits.Load() != nil {
		return err
	}
	in := make([]any, len(ids))
	for i, id := range ids {
		in[i] = id
	}
	_, err := d.db.DeleteMany(ctx, core.ModelAPIKeyLimit, core.In("keyId", in...))
	return err
}

// setOwnerLimits makes cfg the owner's limits, keeping the counters of
// those that stay.
func (d *dbStore) setOwnerLimits(ctx context.Context, ref string, cfg *string) error {
	if err := d.checkSchema(ctx, false); err != nil {
		return err
	}
	if err := d.limitsUsable("SetOwnerLimits"); err != nil {
		return err
	}
	want := (&keystore.Key{Limits: cfg}).LimitConfigs()
	return d.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		return replaceLimits(ctx, tx, core.Eq("owner", ref), func(name string) map[string]any {
			return map[string]any{"key": ownerRowKey(keystore.Hash(ref), name), "keyId": int64(0), "owner": ref}
		}, want)
	})
}

func (d *dbStore) ownerLimits(ctx context.Context, ref string) (map[string]LimitUsage, error) {
	if err := d.checkSchema(ctx, false); err != nil || d.schema.noLimits.Load() != nil {
		return nil, err
	}
	rows, err := d.db.FindMany(ctx, core.ModelAPIKeyLimit, []core.Where{core.Eq("owner", ref)}, nil)
	if err != nil {
		return nil, err
	}
	cfg, counts := map[string]keystore.LimitConfig{}, map[string]keystore.LimitCount{}
	for _, r := range rows {
		name := r.Text("name")
		cfg[name], counts[name] = rowLimit(r)
	}
	var s keystore.Key
	s.SetLimitConfigs(cfg)
	s.SetLimitCounters(counts)
	return usage(&s), nil
}
