package apikey

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// reroll in storage-only mode leaves the key where it is stored (its
// location) and, in order: points the new hash to the location, which
// opens nothing until the key holds that hash; then patches the key to
// hold it, listing the old hash with the end of its grace in Rerolled
// (claims check both, rule 0 of keystore.Apply, atomically with the record);
// then lets the old hash's pointer, if it had one, expire with its grace.
// A failure midway leaves at worst a pointer that opens nothing. Two
// rerolls of one key at once: the later patch wins, and the plaintext the
// earlier one returned stops at once.
func (st *storageStore) reroll(ctx context.Context, id int64, mk newKey, now time.Time, grace time.Duration) (*keystore.Key, error) {
	if !st.rerolls {
		return nil, fmt.Errorf("apikey: Reroll: %w: storage %T does not implement keystore.Rerollable", core.ErrUnsupported, st.c)
	}
	loc, s, err := st.located(ctx, id)
	if err != nil || s == nil {
		return nil, err
	}
	hash, start := mk(deref(s.Prefix))
	ms := now.UnixMilli()
	ends := s.RerolledUntil()
	var over []string
	for h, end := range ends {
		if end <= ms {
			over = append(over, h)
			delete(ends, h)
		}
	}
	if grace > 0 {
		if ends == nil {
			ends = map[string]int64{}
		}
		ends[s.Key] = now.Add(grace).UnixMilli()
	}
	var rerolled any // nil: none left
	if len(ends) > 0 {
		b, err := json.Marshal(ends)
		if err != nil {
			return nil, err
		}
		rerolled = string(b)
	}
	if hash != loc {
		if err := st.s.Set(ctx, st.toKey(hash), loc, 0); err != nil {
			return nil, err
		}
	}
	after, ok, err := st.c.Patch(ctx, st.recKey(loc), map[string]any{
		"key": hash, "start": start, "updatedAt": ms, "rerolled": rerolled,
	})
	if err != nil || !ok {
		return nil, err // !ok: deleted meanwhile; the new pointer opens nothing
	}
	// Tidying only (rule 0 refuses them anyway), so a failure is no reason
	// to fail a reroll that is done: the pointers of hashes that open
	// nothing any more, or will not once their grace is over.
	if s.Key != loc {
		if grace > 0 {
			_ = st.s.Set(ctx, st.toKey(s.Key), loc, grace)
		} else {
			_ = st.s.Delete(ctx, st.toKey(s.Key))
		}
	}
	for _, h := range over {
		if h != loc {
			_ = st.s.Delete(ctx, st.toKey(h))
		}
	}
	return &after, nil
}
