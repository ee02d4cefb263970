package apikey

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

// sharedCache is the cached mode's copy of keys in a secondary storage
// ([WithCache]), which the database store reads before the database and
// fills after it. A nil *sharedCache is no cache: every method is then a
// no-op (or a miss).
//
// For each key hash it keeps an entry (the key as read from the database,
// tagged with a generation) and the key's current generation, a random
// token that every change through the manager renews before and after its
// database write. An entry counts only while its tag is the current
// generation, so an entry filled from a read made before a change, however
// late it reaches the cache, is never used after the change returns: the
// renewal after the write has replaced the generation it was read under.
// Without a generation stored (never changed, or expired) the generation
// is "".
//
// A generation must outlive every entry tagged with an older one. Entries
// live ttl, and a verification does not fill the cache when more than ttl
// has passed since it read the generation; so a generation kept for
// 2·ttl, plus a margin for the fill's trip to the storage, does.
type sharedCache struct {
	s      driver.SecondaryStorage
	ttl    time.Duration
	prefix string
	clock  func() time.Time
	// tx: the cache of a view bound to a caller's transaction (In), which
	// is neither read nor filled, and refuses every change to a key: its
	// renewals would precede the caller's commit (see tx.go).
	tx bool
}

// cacheEntry is the value of a cached key.
type cacheEntry struct {
	Gen string       `json:"gen"`
	Key keystore.Key `json:"key"`
}

// generation is the generation a verification read, and when.
type generation struct {
	token string
	known bool // false: reading it failed, or no cache, so nothing may be cached under it
	at    time.Time
}

// generationMargin covers a fill's trip to the storage and the difference
// between this process's clock and the storage's.
const generationMargin = time.Minute

// invalidateTimeout bounds the renewal of a generation after a database
// write, which goes on when the caller's context ends: leaving it undone
// would let a cached entry outlive the change that the database holds.
const invalidateTimeout = 10 * time.Second

// entryKey is where the cache keeps a key, by hash; genKey is where it
// keeps the key's generation.
func (c *sharedCache) entryKey(hash string) string { return c.prefix + "key:" + hash }
func (c *sharedCache) genKey(hash string) string   { return c.prefix + "gen:" + hash }

// generation reads the current generation of a key. A storage that fails
// is no reason to fail the verification: the database is the truth, and
// the entry is then neither used nor filled.
func (c *sharedCache) generation(ctx context.Context, hash string) generation {
	if c == nil || c.tx {
		return generation{}
	}
	at := c.clock()
	v, ok, err := c.s.Get(ctx, c.genKey(hash))
	if err != nil {
		return generation{}
	}
	if !ok {
		v = ""
	}
	return generation{token: v, known: true, at: at}
}

// get returns the cached key if it was cached under gen, or nil. A cache
// that fails or holds garbage is treated as a miss.
func (c *sharedCache) get(ctx context.Context, hash string, gen generation) *keystore.Key {
	if c == nil || !gen.known {
		return nil
	}
	v, ok, err := c.s.Get(ctx, c.entryKey(hash))
	if err != nil || !ok {
		return nil
	}
	var e cacheEntry
	if json.Unmarshal([]byte(v), &e) != nil || e.Key.Key != hash || e.Gen != gen.token {
		return nil
	}
	return &e.Key
}

// fill caches s, read from the database after gen was read. Failing to
// cache only costs later reads.
func (c *sharedCache) fill(ctx context.Context, s *keystore.Key, gen generation) {
	if c == nil || !gen.known || c.clock().Sub(gen.at) > c.ttl {
		return // too late: gen may have expired, and with it the proof that s is stale
	}
	if b, err := json.Marshal(cacheEntry{Gen: gen.token, Key: *s}); err == nil {
		_ = c.s.Set(ctx, c.entryKey(s.Key), string(b), c.ttl)
	}
}

// drop drops a cached key that the database no longer holds or that a
// verification deleted as expired, or whose copy a verification with named
// limits left behind. It is only tidying: such an entry can never be
// answered, since a cached denial is confirmed from the database.
func (c *sharedCache) drop(ctx context.Context, hash string) {
	if c != nil && !c.tx && hash != "" {
		_ = c.s.Delete(ctx, c.entryKey(hash))
	}
}

// renew gives each key a new generation, so that no entry cached before
// is used again, and then drops the entries (only tidying: a failure there
// is harmless).
func (c *sharedCache) renew(ctx context.Context, hashes []string) error {
	ttl := 2*c.ttl + generationMargin
	for _, h := range hashes {
		if err := c.s.Set(ctx, c.genKey(h), rand.Text(), ttl); err != nil {
			return err
		}
	}
	for _, h := range hashes {
		_ = c.s.Delete(ctx, c.entryKey(h))
	}
	return nil
}

// around renews the generations of the keys with the given hashes, runs
// the database write, and renews them again. The first renewal keeps
// entries cached before the change from being used should the second one
// never happen; the second refuses the entries that verifications read
// during the write and cache later. The second runs even when the write
// fails, since a failed write may still have committed.
func (c *sharedCache) around(ctx context.Context, op string, hashes []string, write func(ctx context.Context) error) error {
	if c != nil && c.tx {
		return invalidf("%s in a caller's transaction (In) on a manager WithCache: the shared cache would be renewed before the transaction commits; change keys outside it", op)
	}
	if c == nil || len(hashes) == 0 {
		return write(ctx)
	}
	if err := c.renew(ctx, hashes); err != nil {
		return fmt.Errorf("apikey: %s: nothing changed: the cache refused to invalidate the key: %w", op, err)
	}
	werr := write(ctx)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), invalidateTimeout)
	defer cancel()
	if err := c.renew(actx, hashes); err != nil {
		if werr != nil {
			return errors.Join(werr, err)
		}
		return fmt.Errorf("apikey: %s: the change is written, but the cache refused to invalidate the key, "+
			"which verifications may see as it was for up to %v: %w", op, c.ttl, err)
	}
	return werr
}
