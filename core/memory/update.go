package memory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Update reads the values at keys and, in the same atomic step, writes
// back those that fn changes: the read-modify-write over several keys that
// a networked storage runs as one script (as Redis runs an API-key claim).
// It holds the locks of the keys' shards, taken in shard order, for as
// long as fn runs, so fn must be quick and must not call the storage.
//
// fn gets one value per key: the text of a live value ("" when the key is
// absent, found false; a counter in decimal). It edits values in place and
// returns which of them to write, or an error, which writes nothing and
// is returned. A written key keeps its expiry; one that was absent is
// stored without expiry. The keys must be distinct.
func (s *Storage) Update(ctx context.Context, keys []string, fn func(values []string, found []bool) (write []bool, err error)) error {
	if len(keys) == 0 {
		return nil
	}
	for i, k := range keys {
		if slices.Contains(keys[:i], k) {
			return fmt.Errorf("%w: memory storage Update: key %q is given twice", core.ErrInvalid, k)
		}
	}
	shards := make([]int, len(keys))
	for i, k := range keys {
		shards[i] = s.shardOf(k)
	}
	order := slices.Clone(shards)
	slices.Sort(order)
	order = slices.Compact(order)
	s.shards[order[0]].calls.Add(1) // one call, however many shards
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, i := range order {
		s.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range order {
			s.shards[i].mu.Unlock()
		}
	}()
	now := s.clock()
	values, found := make([]string, len(keys)), make([]bool, len(keys))
	entries := make([]*storageEntry, len(keys))
	for i, k := range keys {
		if e, ok := s.shards[shards[i]].live(k, now); ok {
			entries[i], found[i] = e, true
			values[i] = e.text
			if e.isCount {
				values[i] = strconv.FormatInt(e.counter, 10)
			}
		}
	}
	write, err := fn(values, found)
	if err != nil {
		return err
	}
	for i, k := range keys {
		if i >= len(write) || !write[i] {
			continue
		}
		var expires time.Time
		if entries[i] != nil {
			expires = entries[i].expires
		}
		s.shards[shards[i]].put(k, &storageEntry{text: values[i], expires: expires}, now)
	}
	return nil
}
