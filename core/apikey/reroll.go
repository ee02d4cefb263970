package apikey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// Reroll gives key id a new plaintext, which it returns once as Create
// does, with the key as stored. The key keeps its record: its id, owner,
// settings, quota, refill schedule and rate-limit window go on as they
// were, so no request is counted twice or lost across the switch, however
// many verifications of the old plaintext are in flight.
//
// The old plaintext keeps opening the same record for grace (0: it stops
// at once), then answers [CodeInvalid]. Each earlier plaintext keeps its
// own grace when a key is rerolled again. An unknown id fails with
// [core.ErrNotFound]; a negative grace, or one shorter than a millisecond,
// with [core.ErrInvalid], before any write.
//
// In database mode a grace above 0 needs the rerolledKey table
// ([core.RerolledKeyModel]), where the old hash waits out its grace:
// [core.DB.CreateTables] creates it, and sluicegen writes its DDL. Without
// it Reroll fails with [core.ErrSchema], naming the table, and
// verification works as before. A manager looks for the table when it
// checks its schema ([Manager.CheckSchema]), so a manager started before
// the table was created ignores rerolled keys' old plaintexts until it
// checks again. In storage-only mode the storage must implement
// [keystore.Rerollable], or Reroll fails with [core.ErrUnsupported]; two rerolls of
// one key at once there leave the later one's plaintext, the earlier one's
// stopping at once.
//
// A verification of an old plaintext during its grace costs a read more
// than one of the current plaintext: the manager does not remember keys by
// their old hashes.
func (m *Manager) Reroll(ctx context.Context, id int64, grace time.Duration) (plaintext string, key *Key, err error) {
	start := time.Now()
	if err := m.initialised("Reroll"); err != nil {
		return "", nil, err
	}
	switch {
	case grace < 0:
		return "", nil, invalidf("Reroll: grace %v is negative", grace)
	case grace > 0 && grace < time.Millisecond:
		return "", nil, invalidf("Reroll: grace %v is shorter than a millisecond", grace)
	}
	if err := m.ready(ctx, "Reroll"); err != nil {
		return "", nil, err
	}
	random, err := randomLetters(KeyLength)
	if err != nil {
		return "", nil, err
	}
	now := m.now()
	s, err := m.store.reroll(ctx, id, func(prefix string) (string, string) {
		plaintext = prefix + random
		return Hash(plaintext), plaintext[:StartLength]
	}, now, grace)
	if err != nil {
		return "", nil, err
	}
	if s == nil {
		return "", nil, fmt.Errorf("apikey: key %d: %w", id, core.ErrNotFound)
	}
	if key, err = toKey(s); err != nil {
		return "", nil, err
	}
	m.changed(ctx, start, Event{Kind: Rerolled, Key: key})
	return plaintext, key, nil
}

// newKey makes the new plaintext of a rerolled key from its prefix and
// returns its hash and start.
type newKey func(prefix string) (hash, start string)

// errRerollRaced reports a reroll whose key changed its hash between the
// read and the write: another reroll came first.
var errRerollRaced = errors.New("apikey: the key was rerolled meanwhile")

// dbReroll moves the key's hash in one transaction: the old hash goes into
// the rerolledKey table with the end of its grace, and the key's row takes
// the new hash, guarded on still having the old one. Verifications in
// flight with the old hash either wrote before the transaction, or miss
// (their write is guarded on the hash they read) and read again, finding
// the row through the rerolledKey table; the counters never move.
func (m *Manager) dbReroll(ctx context.Context, id int64, mk newKey, now time.Time, grace time.Duration) (*keystore.Key, error) {
	if grace > 0 {
		if p := m.schema.noRerolls.Load(); p != nil {
			return nil, fmt.Errorf("apikey: Reroll: a grace period needs the %s table: %w", core.ModelRerolledKey, *p)
		}
	}
	for attempt := 0; attempt < m.o.maxAttempts; attempt++ {
		s, err := m.dbFind(ctx, core.Eq("id", id))
		if err != nil || s == nil {
			return nil, err
		}
		var after *keystore.Key
		hash, start := mk(deref(s.Prefix))
		err = m.invalidateAround(ctx, "Reroll", []string{s.Key}, func(ctx context.Context) error {
			return m.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
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
				after = fromRow(row)
				return nil
			})
		})
		switch {
		case errors.Is(err, errRerollRaced), errors.Is(err, core.ErrContention):
			continue // rolled back: read the key as it now is
		case err != nil:
			return nil, err
		}
		m.keys.drop(s.Key)
		m.keys.put(after)
		return after, nil
	}
	return nil, fmt.Errorf("apikey: Reroll: %w: the key was rerolled by others %d times meanwhile", core.ErrContention, m.o.maxAttempts)
}

// dbRead reads the key that hash opens at now: the key with that hash, or
// the one an old hash of it still opens (rerolled true); nil for none.
func (m *Manager) dbRead(ctx context.Context, hash string, now time.Time) (s *keystore.Key, rerolled bool, err error) {
	if s, err = m.dbFind(ctx, core.Eq("key", hash)); err != nil || s != nil {
		return s, false, err
	}
	s, err = m.dbRerolled(ctx, hash, now)
	return s, s != nil, err
}

// dbRerolled finds the key that an old hash still opens at now, or nil.
func (m *Manager) dbRerolled(ctx context.Context, hash string, now time.Time) (*keystore.Key, error) {
	if m.schema.noRerolls.Load() != nil {
		return nil, nil
	}
	row, ok, err := m.db.FindOne(ctx, core.ModelRerolledKey, core.Eq("key", hash), core.Gt("expiresAt", now))
	if err != nil || !ok {
		return nil, err
	}
	return m.dbFind(ctx, core.Eq("id", row.Int("keyId")))
}

// dbForgetRerolled deletes the old hashes matching where, when the table
// exists.
func (m *Manager) dbForgetRerolled(ctx context.Context, where core.Where) error {
	if err := m.ready(ctx, "delete"); err != nil || m.schema.noRerolls.Load() != nil {
		return err // whether the table exists is known once the schema is checked
	}
	_, err := m.db.DeleteMany(ctx, core.ModelRerolledKey, where)
	return err
}

// reroll in storage-only mode leaves the key where it is stored (its
// location) and, in order: points the new hash to the location, which
// opens nothing until the key holds that hash; then patches the key to
// hold it, listing the old hash with the end of its grace in Rerolled
// (claims check both, rule 0 of keystore.Apply, atomically with the record);
// then lets the old hash's pointer, if it had one, expire with its grace.
// A failure midway leaves at worst a pointer that opens nothing. Two
// rerolls of one key at once: the later patch wins, and the plaintext the
// earlier one returned stops at once.
func (st *storeOnly) reroll(ctx context.Context, id int64, mk newKey, now time.Time, grace time.Duration) (*keystore.Key, error) {
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
