package memory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// ApplyPolicy applies steps on several keys in one atomic step, under the
// locks of all their shards (taken in shard order): see
// driver.PolicyApplier.
func (s *Storage) ApplyPolicy(ctx context.Context, steps []driver.PolicyStep) (bool, error) {
	shards := make([]int, 0, len(steps))
	for _, st := range steps {
		if !st.TAT && st.TTL <= 0 {
			return false, fmt.Errorf("%w: memory storage ApplyPolicy %q: ttl must be positive, got %v", core.ErrInvalid, st.Key, st.TTL)
		}
		if st.TAT && (st.Now < 0 || st.By < 0 || st.Max < 0) {
			return false, fmt.Errorf("%w: memory storage ApplyPolicy %q: now %d, increment %d and limit %d must not be negative", core.ErrInvalid, st.Key, st.Now, st.By, st.Max)
		}
		shards = append(shards, s.shardOf(st.Key))
	}
	slices.Sort(shards)
	shards = slices.Compact(shards)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	for _, i := range shards {
		s.shards[i].calls.Add(1)
		s.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range shards {
			s.shards[i].mu.Unlock()
		}
	}()
	now := s.clock()
	ok := true
	for i := range steps {
		st := &steps[i]
		v, left, err := s.current(st.Key, now)
		if err != nil {
			return false, err
		}
		st.Value, st.TTLLeft = v, left
		if st.TAT {
			st.Fits = max(v, st.Now)-st.Now <= st.Max-st.By
		} else {
			st.Fits = sumAtMost(v, st.By, st.Max)
		}
		ok = ok && (st.Fits || st.Optional)
	}
	if !ok {
		return false, nil
	}
	for i := range steps {
		if st := &steps[i]; st.Fits {
			s.apply(st, now)
		}
	}
	return true, nil
}

// current reads the counter at key (0 when absent) and its time left, on
// a shard the caller holds.
func (s *Storage) current(key string, now time.Time) (int64, time.Duration, error) {
	e, ok := s.shards[s.shardOf(key)].live(key, now)
	if !ok {
		return 0, 0, nil
	}
	v := e.counter
	if !e.isCount {
		n, err := strconv.ParseInt(e.text, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("memory storage ApplyPolicy %q: %w", key, errNotCounter)
		}
		v = n
	}
	var left time.Duration
	if !e.expires.IsZero() {
		left = e.expires.Sub(now)
	}
	return v, left, nil
}

// apply applies a step that fits, on a shard the caller holds.
func (s *Storage) apply(st *driver.PolicyStep, now time.Time) {
	sh := &s.shards[s.shardOf(st.Key)]
	if st.TAT {
		if st.By == 0 {
			return
		}
		tat := max(st.Value, st.Now) + st.By
		sh.put(st.Key, &storageEntry{counter: tat, isCount: true, expires: now.Add(time.Duration(tat-st.Now) * time.Millisecond)}, now)
		return
	}
	if e, ok := sh.live(st.Key, now); ok {
		e.counter, e.isCount, e.text = st.Value+st.By, true, ""
		return
	}
	sh.put(st.Key, &storageEntry{counter: st.By, isCount: true, expires: now.Add(st.TTL)}, now)
}

var _ driver.PolicyApplier = (*Storage)(nil)
