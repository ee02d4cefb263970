package concurrency

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/sluice-go/sluice/core"
)

// Separator joins a key and a slot number into the key of the slot's row
// in the rateLimit model: slot 2 of "export:user-42" is the row
// "export:user-42#2".
const Separator = "#"

// dbAttempts bounds the passes of one database acquisition that lose
// races (a slot taken or created between a miss and the read after it).
const dbAttempts = 10

// Database keeps slots as rows of the rateLimit model through db, shared
// by every process on the same tables, without a table of its own: slot i
// of key k is the row whose key is k + [Separator] + i, its lastRequest
// the end of the lease in epoch milliseconds (0 or past: free) and its
// count the slot's generation. Keep such keys apart from the rate
// limiter's (a prefix of their own, say), for the two share the table.
// A key whose slot rows would be longer than the key column (255
// characters by default) is refused.
//
// An acquisition is one guarded IncrementOne on the key's slot rows (key
// IN their keys AND lastRequest ≤ now, count + 1, lastRequest = the lease's
// end): the database changes exactly one matching row, so two acquirers
// never get the same slot. A miss reads the slot rows; missing ones are
// created already leased (the unique key lets one creator win each), and
// a slot freed meanwhile is tried again. Only when the read finds all n
// leased is the call denied. Release and renewal are one guarded Update
// each, on the slot's row and generation.
//
// Before its first acquisition the store runs db.CheckSchema on the
// rateLimit model: without the unique key two creators could lease one slot.
// Pruning the rateLimit table (ratelimit.Limiter.Prune) may delete free slot
// rows; they are created again, with a random generation.
func Database(db *core.DB) Store { return &dbStore{db: db} }

type dbStore struct {
	db *core.DB

	mu      sync.Mutex  // held while checking the schema
	checked atomic.Bool // the check passed: the fast path
	keySize int         // written before checked is set
}

const model = core.ModelRateLimit

// ready checks the store and the table, once they pass.
func (s *dbStore) ready(ctx context.Context) error {
	if s.checked.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.checked.Load() {
		return nil
	}
	if s.db == nil || isNil(s.db.Adapter()) || s.db.Schema() == nil {
		return invalidf("Database: the core.DB is nil or not initialised: make it with core.New or an adapter's Open")
	}
	t, ok := s.db.Schema().Table(model)
	if !ok {
		return invalidf("Database: the schema has no %q model", model)
	}
	if err := s.db.CheckSchema(ctx, model); err != nil {
		return err
	}
	if c, ok := t.Column("key"); ok {
		s.keySize = c.Field.Size
	}
	s.checked.Store(true)
	return nil
}

// slotKeys returns the row keys of key's n slots, refusing a key whose
// longest slot key the column cannot hold (MySQL outside strict mode would
// truncate it, and two slots could then share a row).
func (s *dbStore) slotKeys(key string, n int) ([]any, error) {
	if !utf8.ValidString(key) {
		return nil, invalidf("key is not valid UTF-8")
	}
	last := slotKey(key, n-1)
	if c := utf8.RuneCountInString(last); s.keySize > 0 && c > s.keySize {
		return nil, invalidf("the key's last slot key, of %d characters, is longer than the %d the key column holds", c, s.keySize)
	}
	keys := make([]any, n)
	for i := range keys {
		keys[i] = slotKey(key, i)
	}
	return keys, nil
}

func slotKey(key string, i int) string { return key + Separator + strconv.Itoa(i) }

// slotOf parses the slot number from a slot row's key.
func slotOf(key, rowKey string) (int, bool) {
	rest, ok := strings.CutPrefix(rowKey, key+Separator)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil
}

func (s *dbStore) AcquireSlot(ctx context.Context, key string, n int, now, expires int64) (Lease, bool, error) {
	if err := s.ready(ctx); err != nil {
		return Lease{}, false, err
	}
	keys, err := s.slotKeys(key, n)
	if err != nil {
		return Lease{}, false, err
	}
	for range dbAttempts {
		if err := ctx.Err(); err != nil {
			return Lease{}, false, err
		}
		row, ok, err := s.db.IncrementOne(ctx, core.IncrementRequest{
			Model:     model,
			Where:     []core.Where{core.In("key", keys...), core.Lte("lastRequest", now)},
			Increment: map[string]int64{"count": 1},
			Set:       map[string]any{"lastRequest": expires},
		})
		switch {
		case lostRace(err):
			continue
		case err != nil:
			return Lease{}, false, err
		case ok:
			i, found := slotOf(key, row.Text("key"))
			if !found {
				return Lease{}, false, errors.New("concurrency: the database returned a row of another key")
			}
			return Lease{Slot: i, Generation: row.Int("count"), Expires: expires}, true, nil
		}
		rows, err := s.db.FindMany(ctx, model, []core.Where{core.In("key", keys...)}, nil)
		if err != nil {
			return Lease{}, false, err
		}
		if len(rows) < n {
			l, ok, err := s.create(ctx, key, n, rows, expires)
			if err != nil || ok {
				return l, ok, err
			}
			continue // every missing slot was created by another: try them again
		}
		earliest := int64(-1)
		for _, r := range rows {
			if e := r.Int("lastRequest"); earliest < 0 || e < earliest {
				earliest = e
			}
		}
		if earliest > now {
			return Lease{Expires: earliest}, false, nil
		}
		// A slot freed between the miss and the read: try again.
	}
	return Lease{}, false, contention(dbAttempts)
}

// create inserts the slot rows missing from rows, leased until expires, and
// returns the first it creates. A unique conflict is another creator's win.
func (s *dbStore) create(ctx context.Context, key string, n int, rows []core.Row, expires int64) (Lease, bool, error) {
	have := make([]bool, n)
	for _, r := range rows {
		if i, ok := slotOf(key, r.Text("key")); ok && i < n {
			have[i] = true
		}
	}
	for i, h := range have {
		if h {
			continue
		}
		// A random first generation: a row pruned and created again does
		// not repeat the generations of its earlier life. Below 2^30, so
		// that an INTEGER count column (Better Auth's, say) holds it.
		gen := 1 + rand.Int64N(1<<30)
		_, err := s.db.Create(ctx, model, map[string]any{"key": slotKey(key, i), "count": gen, "lastRequest": expires})
		switch {
		case errors.Is(err, core.ErrConflict):
			continue
		case err != nil:
			return Lease{}, false, err
		}
		return Lease{Slot: i, Generation: gen, Expires: expires}, true, nil
	}
	return Lease{}, false, nil
}

func (s *dbStore) ReleaseSlot(ctx context.Context, key string, l Lease, now int64) (bool, error) {
	return s.update(ctx, key, l, now, 0)
}

func (s *dbStore) RenewSlot(ctx context.Context, key string, l Lease, now, expires int64) (bool, error) {
	return s.update(ctx, key, l, now, expires)
}

// update sets the lease end of l's slot, guarded on l's generation and on
// a lease still live at now.
func (s *dbStore) update(ctx context.Context, key string, l Lease, now, expires int64) (bool, error) {
	if err := s.ready(ctx); err != nil {
		return false, err
	}
	_, ok, err := s.db.Update(ctx, model,
		[]core.Where{core.Eq("key", slotKey(key, l.Slot)), core.Eq("count", l.Generation), core.Gt("lastRequest", now)},
		map[string]any{"lastRequest": expires})
	return ok, err
}
