package apikey

import (
	"context"
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
		return keystore.Hash(plaintext), plaintext[:StartLength]
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
