package ratelimit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// This file is how each storage decides a policy's rules at once (see
// "Policies" in the package documentation): memory under the locks of
// every counter's shard, a database in one transaction, a secondary
// storage in one driver.PolicyApplier step.

// consumeAll decides every item under the policy lock of their key (one
// of policyStripes, picked by the key's hash): no other decision counts
// under a policy's rules, whose keys only policies on the same key use, so
// each counter is read (under its entry's lock, one at a time: an entry's
// lock is never held while another is taken), every rule decided, and
// the counters written only when every rule that is not a shadow rule
// admits.
func (s *memStorage) consumeAll(ctx context.Context, items []*item, cost, now int64, m Mode, _ int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k := items[0].key
	mu := &s.pol[maphash.String(s.m.seed, k[:strings.LastIndex(k, "}"+PolicySeparator)])%policyStripes]
	mu.Lock()
	defer mu.Unlock()
	next := make([]counter, len(items))
	admitted := true
	for i, it := range items {
		var c counter
		e := s.m.lookup(it.key)
		ok := e != nil
		if ok {
			c = e.c
			e.mu.Unlock()
		}
		next[i] = c
		it.st = applyMode(&next[i], ok, &it.rule, cost, now, m)
		admitted = admitted && (it.st.allowed || it.rule.Shadow)
	}
	if !admitted {
		return nil
	}
	for i, it := range items {
		if it.st.allowed {
			e, _ := s.m.acquire(it.key, now)
			e.c = next[i]
			e.mu.Unlock()
		}
	}
	return nil
}

// policyStripes is how many policy locks a Memory storage has.
const policyStripes = 64

// policyLocks are a Memory storage's policy locks.
type policyLocks [policyStripes]sync.Mutex

// errPolicyDenied rolls a policy's transaction back: a rule denied it.
var errPolicyDenied = errors.New("ratelimit: the policy is denied")

// consumeAll decides every item in one transaction, in the order of their
// keys (so that two policies lock shared rows in one order), each by the
// protocol of a lone request under m, and rolls the transaction back when
// a rule that is not a shadow rule denies. A transaction the database
// aborts for contention (a deadlock, a serialization failure, a Galera
// certification conflict) is tried again as a whole, as a lone request's
// statement is: by the adapter's own rule first (the transaction is
// marked driver.Rerunnable; the SQL engine retries it with pauses, for a
// count and a time budget), then, when that gives up, here within
// attempts, each after seeding the rows.
func (s *dbStorage) consumeAll(ctx context.Context, items []*item, cost, now int64, m Mode, attempts int) error {
	for _, it := range items {
		if err := s.prepare(ctx, it.key); err != nil {
			return err
		}
	}
	if done, err := s.consumeAtOnce(ctx, items, cost, now, m); done || err != nil {
		return err
	}
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b *item) int { return cmp.Compare(a.key, b.key) })
	for range attempts {
		err := s.db.InTx(driver.Rerunnable(ctx), func(ctx context.Context, tx *core.DB) error {
			ts := txStorage(tx, s)
			admitted := true
			for _, it := range sorted {
				st, err := ts.consume(ctx, it.key, it.rule, cost, now, m, attempts)
				if err != nil {
					return err
				}
				it.st = st
				admitted = admitted && (st.allowed || it.rule.Shadow)
			}
			if !admitted {
				return errPolicyDenied
			}
			return nil
		})
		switch {
		case err == nil || errors.Is(err, errPolicyDenied):
			return nil
		case errors.Is(err, core.ErrUnsupported):
			return fmt.Errorf("%w: a policy on Database storage decides in a transaction: %w", core.ErrInvalid, err)
		case !s.lost(err):
			return err // a caller's transaction (Limiter.In) is theirs to repeat
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.seed(ctx, sorted, now, m); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: a policy's transaction still losing races after %d attempts", core.ErrContention, attempts)
}

// consumeAtOnce decides every item in one statement where the database
// can (core.DB.IncrementAll: PostgreSQL) and every row exists: each
// rule's guarded writes, as a lone request's (see policyCases), judged on
// the rows locked and written all or nothing. Each rule's state is then
// the memory storage's decision (applyMode) on its row as locked, which
// the statement's guards decide alike. done is false, with nothing
// written, for SlidingWindow (whose current row changes every window), a
// view of Limiter.In (whose savepoint keeps the caller's transaction
// usable after an error), a storage without the statement and a missing
// row: the transaction then decides (and creates the rows).
func (s *dbStorage) consumeAtOnce(ctx context.Context, items []*item, cost, now int64, m Mode) (done bool, err error) {
	if m == SlidingWindow || s.tx || s.noAll.Load() {
		return false, nil
	}
	writes := make([]core.RowWrite, len(items))
	for i, it := range items {
		writes[i] = core.RowWrite{Key: it.key, Cases: policyCases(it.rule, cost, now, m), Optional: it.rule.Shadow}
	}
	ok, err := s.db.IncrementAll(ctx, model, "key", writes)
	switch {
	case errors.Is(err, driver.ErrNoAll):
		s.noAll.Store(true)
		return false, nil
	case err != nil:
		return false, err
	}
	for _, w := range writes {
		if w.Row == nil {
			return false, nil // nothing written (ok is false): the transaction creates the row
		}
	}
	for i, it := range items {
		w := writes[i]
		c := counter{count: w.Row.Int("count"), last: w.Row.Int("lastRequest")}
		st := applyMode(&c, true, &it.rule, cost, now, m)
		if st.allowed != (w.Case >= 0) {
			return true, fmt.Errorf("ratelimit: rule %q: the policy statement's guard and the rule disagree on the locked row (applied: %v)", it.rule.Name, ok)
		}
		it.st = st
	}
	return true, nil
}

// policyCases are a rule's guarded writes of cost on its row, the first
// that holds applying, as a lone request makes them one at a time:
//   - fixed and Better Auth windows: in a live window (not a later one:
//     see frame.later) with room, count +=
//     cost (under BetterAuthWindow lastRequest := now); in a window that
//     is over, count := cost and lastRequest := the new window's start;
//   - GCRA: on a busy key with room, lastRequest += cost·T; on an idle
//     key, lastRequest := now + cost·T (when cost·T fits the burst).
func policyCases(rule Rule, cost, now int64, m Mode) []core.IncrementRequest {
	if m == GCRA {
		t := gcraInterval(rule)
		burst, inc := rule.Max*t, cost*t
		cases := []core.IncrementRequest{{
			Where:     []core.Where{core.Gt("lastRequest", now), core.Lte("lastRequest", now+burst-inc)},
			Increment: map[string]int64{"lastRequest": inc},
		}}
		if inc <= burst {
			cases = append(cases, core.IncrementRequest{
				Where: []core.Where{core.Lte("lastRequest", now)},
				Set:   map[string]any{"lastRequest": now + inc},
			})
		}
		return cases
	}
	f := rule.frame(now)
	live := core.IncrementRequest{
		Where:     append(f.live(make([]core.Where, 0, 3)), core.Lte("count", rule.Max-cost)),
		Increment: map[string]int64{"count": cost},
	}
	if m == BetterAuthWindow {
		live.Set = map[string]any{"lastRequest": now}
	}
	return []core.IncrementRequest{live, {
		Where: []core.Where{core.Lte("lastRequest", f.after)},
		Set:   map[string]any{"count": cost, "lastRequest": f.open},
	}}
}

// seed creates, outside any transaction, the row of each item that has
// none, holding nothing (count 0, in a window long over; under GCRA an
// idle tat; under SlidingWindow the current window's row at 0): what a
// missing row means, so that the next transaction finds every row and
// inserts none. Concurrent inserts into one gap of the key index are
// what deadlocks such transactions on MySQL and MariaDB (each holds a gap
// lock the other's insert waits for); a unique conflict here means the
// row exists, which is all seed wants.
func (s *dbStorage) seed(ctx context.Context, items []*item, now int64, m Mode) error {
	for _, it := range items {
		key, start := it.key, int64(0)
		if m == SlidingWindow {
			w := it.rule.Window.Milliseconds()
			i, st := windowOf(now, w)
			cur, _, err := s.slidingKeys(it.key, i)
			if err != nil {
				return err
			}
			key, start = cur, st
		}
		if _, err := s.db.Create(ctx, model, map[string]any{"key": key, "count": int64(0), "lastRequest": start}); err != nil && !errors.Is(err, core.ErrConflict) {
			return err
		}
	}
	return nil
}

// consumeAll decides every item in one driver.PolicyApplier call: for
// each rule, a bounded increment (fixed windows; under SlidingWindow
// bounded by Max less the weighted previous count, read first) or a TAT
// advance (GCRA).
func (s *secondaryStorage) consumeAll(ctx context.Context, items []*item, cost, now int64, m Mode, _ int) error {
	if err := s.policyCapable(); err != nil {
		return err
	}
	pa := s.s.(driver.PolicyApplier)
	steps := make([]driver.PolicyStep, len(items))
	slides := make([]slide, len(items))
	ends := make([]int64, len(items))
	for i, it := range items {
		st := driver.PolicyStep{By: cost, Max: it.rule.Max, Optional: it.rule.Shadow}
		st.Key, st.TTL, ends[i] = fixedCounter(it.key, it.rule, now)
		switch m {
		case SlidingWindow:
			v := newSlide(now, it.rule.Window.Milliseconds())
			w, _ := windowOf(now, v.w)
			prev, err := s.get(ctx, slidingName(it.key, w-1))
			if err != nil {
				return err
			}
			v.prev = prev
			slides[i] = v
			st.Key, st.Max, st.TTL = slidingName(it.key, w), it.rule.Max-v.weighted(), 2*it.rule.Window
		case GCRA:
			t := gcraInterval(it.rule)
			st.TAT, st.Now, st.By, st.Max, st.TTL = true, now, cost*t, it.rule.Max*t, 0
		}
		steps[i] = st
	}
	if _, err := pa.ApplyPolicy(ctx, steps); err != nil {
		return err
	}
	for i, it := range items {
		st := steps[i]
		switch m {
		case SlidingWindow:
			v := slides[i]
			v.cur = st.Value
			if st.Fits {
				it.st = v.admitted(st.Value + cost)
			} else {
				it.st = v.denied(cost, it.rule.Max)
			}
		case GCRA:
			t := gcraInterval(it.rule)
			tat := max(st.Value, now)
			if st.Fits {
				it.st = gcraState(it.rule, t, tat+cost*t, now, true)
			} else {
				it.st = gcraState(it.rule, t, tat, now, false)
			}
		default:
			if st.Fits {
				it.st = state{allowed: true, count: st.Value + cost, reset: resetAt(now, st.TTLLeft, it.rule, ends[i])}
			} else {
				it.st = state{count: st.Value, reset: resetAt(now, st.TTLLeft, it.rule, ends[i])}
			}
		}
	}
	return nil
}

// policyCapable refuses policies on a storage without driver.PolicyApplier:
// charging rule by rule there could deny a request wrongly (see "Policies"
// in the package documentation).
func (s *secondaryStorage) policyCapable() error {
	if _, ok := s.s.(driver.PolicyApplier); !ok {
		return invalidf("Secondary: a policy needs a storage that applies its rules in one atomic step (driver.PolicyApplier); %T has none", s.s)
	}
	return nil
}
