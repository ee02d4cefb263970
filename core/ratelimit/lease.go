package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// This file is the exact leases (see "Leases" in the package
// documentation): a limiter WithLeases claims a block of a key's window in
// one guarded write, the write every decision makes, and spends it in
// memory. A block is claimed only when it fits what the window has left,
// and a unit is spent only from a block of the window it was claimed in, so
// no window ever admits more than its Max, whatever the processes. What a
// process holds and has not spent is the only under-admission: at most the
// lease size per process and key, returned when the lease ends.

// maxLeases bounds the leases one limiter holds: a key beyond them is
// decided without one, as it would be without WithLeases.
const maxLeases = 1 << 16

// WithLeases makes the limiter reserve a key's units in blocks of at most
// size, for hot keys shared by several processes: one guarded write claims
// a block (never more than the window has left), the requests that follow
// spend it in memory without I/O, and what is not spent goes back to the
// counter when the lease ends: at the window's end (with the window),
// after [WithLeaseTime] unused (by [Limiter.Prune] or StartPruning), or at
// [Limiter.Close]. No window admits more than its Max; a process holds at
// most size units of a key unspent, the only requests it may deny while
// the window still has room elsewhere, and a process that dies loses at
// most that. Blocks adapt to demand: they start at an eighth of size,
// double while each is spent within the lease time, and near the limit are
// at most half of what the window has left.
//
// It needs [FixedWindow] on [Database] storage (any adapter) or on
// [Secondary] storage with a bounded increment (Redis), and composes with
// [WithWriteCombining]. A size of 0 or less is refused by New; a rule
// whose Max is below size, or a calendar rule, is refused by every
// decision and by [Limiter.CheckRule] (errors wrapping core.ErrInvalid).
// [Limiter.Leased] and [Event].Leased report what the limiter holds.
func WithLeases(size int64) Option {
	return func(o *options) { o.lease, o.leaseSet = size, true }
}

// WithLeaseTime sets how long a lease may sit unused before [Limiter.Prune]
// returns what it holds (default [DefaultLeaseTime]); a lease in use
// lasts until its window ends. On Secondary storage the rest goes back
// only when the storage tags its counters (driver.LeaseReturner: Redis 7
// and later), so that a return never credits a counter created since;
// on another, an unused lease lapses with its window.
func WithLeaseTime(d time.Duration) Option { return func(o *options) { o.leaseTime = d } }

// leaser is a limiter's leases, one per key and rule.
type leaser struct {
	store Storage
	comb  *combiner // nil: refills go straight to the storage
	size  int64
	idle  int64 // lease time, ms

	mu     sync.Mutex // guards leases and closed
	leases map[lineKey]*lease
	closed bool
	held   atomic.Int64 // units held in every lease

	// granted reports whether a refill's answer grants the block: the
	// claim's own answer. Tests replace it to show that the races catch a
	// lease that spends a block the window had no room for.
	granted func(st state) bool
}

// lease is one key's block. gate is its lock, taken with the caller's
// context: a refill holds it over the write, so a process's callers on
// one key wait for one refill rather than each make their own.
type lease struct {
	key        string
	gate       chan struct{}
	avail      int64        // claimed and not spent (under gate)
	shown      atomic.Int64 // avail, for readers without the gate
	start, end int64        // the window the units belong to
	used       int64        // when the lease last spent or claimed
	granted    int64        // when the last block was claimed
	block      int64        // the next block's size
	seen       int64        // the window's count after the last claim
	tag        int64        // on Secondary storage, the counter avail was claimed from (see driver.LeaseReturner); 0: none
}

func newLeaser(s Storage, comb *combiner, size int64, idle time.Duration) *leaser {
	return &leaser{store: s, comb: comb, size: size, idle: idle.Milliseconds(), leases: map[lineKey]*lease{},
		granted: func(st state) bool { return st.allowed }}
}

// problem says why the leases cannot serve rule, or "".
func (ls *leaser) problem(rule Rule) string {
	switch {
	case ls == nil || rule.Max == 0:
		return ""
	case rule.Calendar != 0:
		return "WithLeases counts fixed windows of Window: a calendar rule cannot lease"
	case ls.size > rule.Max:
		return fmt.Sprintf("lease size %d is above the rule's max %d", ls.size, rule.Max)
	}
	return ""
}

// checkLeases refuses, in New, a lease configuration no rule can use, and
// fills in the default lease time.
func checkLeases(o *options, s Storage) error {
	if !o.leaseSet {
		if o.leaseTime != 0 {
			return invalidf("New: WithLeaseTime without WithLeases")
		}
		return nil
	}
	switch st := s.(type) {
	case *dbStorage:
	case *secondaryStorage:
		if _, ok := st.s.(driver.BoundedIncrementer); !ok {
			return invalidf("New: WithLeases on Secondary storage needs a bounded increment (driver.BoundedIncrementer); %T has none", st.s)
		}
	default:
		return invalidf("New: WithLeases needs Database or Secondary storage: %s storage is one process's, with nothing to lease from", storageName(s))
	}
	switch {
	case o.lease <= 0:
		return invalidf("New: lease size %d must be positive", o.lease)
	case o.mode != FixedWindow:
		return invalidf("New: WithLeases counts fixed windows; it does not serve %v", o.mode)
	case o.leaseTime < 0 || o.leaseTime%time.Millisecond != 0:
		return invalidf("New: lease time %v must be a positive whole number of milliseconds", o.leaseTime)
	}
	if o.leaseTime == 0 {
		o.leaseTime = DefaultLeaseTime
	}
	return nil
}

// get returns key's lease under rule, or nil when the limiter is closed or
// holds as many leases as it may.
func (ls *leaser) get(key string, rule Rule) *lease {
	lk := lineKey{key: key, rule: rule, mode: FixedWindow}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return nil
	}
	le := ls.leases[lk]
	if le == nil && len(ls.leases) < maxLeases {
		le = &lease{key: key, gate: make(chan struct{}, 1), block: ls.firstBlock()}
		ls.leases[lk] = le
	}
	return le
}

// firstBlock is the size of a lease's first block, and of the first after
// it sat unused.
func (ls *leaser) firstBlock() int64 { return max(ls.size/8, 1) }

func (le *lease) lock(ctx context.Context) error {
	select {
	case le.gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (le *lease) unlock() { <-le.gate }

// add changes what the lease holds by n.
func (ls *leaser) add(le *lease, n int64) {
	le.avail += n
	le.shown.Store(le.avail)
	ls.held.Add(n)
}

// lapse drops what the lease holds without returning it: its window is
// over, or it belongs to another.
func (ls *leaser) lapse(le *lease) { ls.add(le, -le.avail) }

// consume decides a request of cost (1 ≤ cost ≤ Max) from key's lease,
// refilling it when it holds too little.
func (ls *leaser) consume(ctx context.Context, key string, rule Rule, cost, now int64, attempts int) (state, error) {
	le := ls.get(key, rule)
	if le == nil {
		return ls.claim(ctx, key, rule, cost, now, attempts)
	}
	if err := le.lock(ctx); err != nil {
		return state{}, err
	}
	defer le.unlock()
	// The window is over: its units went with it. A clock reading before
	// the window's start is not: a caller that read the clock, then waited
	// for the refill that opened this window, is counted in it, as its
	// guarded write would have been.
	if now >= le.end {
		ls.lapse(le)
	}
	if le.avail < cost {
		st, err := ls.refill(ctx, le, rule, cost, now, attempts)
		if err != nil || !st.allowed {
			return st, err
		}
	}
	ls.add(le, -cost)
	le.used = now
	// The window's count at the last claim, less what is still held here.
	return state{allowed: true, count: le.seen - le.avail, reset: le.end}, nil
}

// refill claims blocks until the lease holds cost: each at least what is
// missing, the lease's block size, at most half of what the window had
// left at the last claim; when that does not fit, half of what it has left
// now, until what is left is less than what is missing. It reports allowed
// when the lease holds enough.
func (ls *leaser) refill(ctx context.Context, le *lease, rule Rule, cost, now int64, attempts int) (state, error) {
	if le.granted > 0 && now-le.granted < ls.idle {
		le.block = min(2*le.block, ls.size) // the last block went within the lease time
	}
	room := rule.Max
	if now < le.end {
		room = rule.Max - le.seen
	}
	_, exact := ls.store.(*dbStorage)
	sec, _ := ls.store.(*secondaryStorage)
	var tagged driver.LeaseReturner
	if sec != nil {
		tagged = sec.returner()
	}
	for range attempts {
		need := cost - le.avail
		k := min(max(need, min(le.block, (room+1)/2)), rule.Max)
		var st state
		var tag int64
		var err error
		if tagged != nil {
			st, tag, err = sec.claimTagged(ctx, tagged, le.key, rule, k, now)
		} else {
			st, err = ls.claim(ctx, le.key, rule, k, now, attempts)
		}
		if err != nil {
			return state{}, err
		}
		// A row's window end is exact: another one means the counter was
		// reset, and what is held belongs to a window that is gone. A
		// secondary counter's is read from its TTL and moves by a
		// millisecond; its window only changes once now passes le.end,
		// unless the storage tags its counters: another tag is another
		// counter (expired or reset and created anew), and what is held
		// was claimed from one that is gone.
		if exact && st.reset != le.end || tagged != nil && tag != le.tag {
			ls.lapse(le)
		}
		le.tag = tag
		le.seen, le.end, le.start = st.count, st.reset, st.reset-rule.Window.Milliseconds()
		room = rule.Max - st.count
		if ls.granted(st) {
			ls.add(le, k)
			le.granted, le.used = now, now
			if le.avail >= cost {
				return state{allowed: true}, nil
			}
			continue // the window changed under what was held: claim the rest
		}
		if room < cost-le.avail {
			// Denied at the window's state. What the lease holds is less
			// than the cost; it stays for smaller requests.
			return state{count: st.count - le.avail, reset: st.reset}, nil
		}
	}
	return state{}, fmt.Errorf("ratelimit: %w: a lease's refills still losing races after %d attempts", core.ErrContention, attempts)
}

// claim is one guarded claim of k units in the storage, through the write
// combiner when the limiter has one.
func (ls *leaser) claim(ctx context.Context, key string, rule Rule, k, now int64, attempts int) (state, error) {
	if ls.comb != nil {
		return ls.comb.consume(ctx, key, rule, k, now, FixedWindow, attempts)
	}
	return ls.store.consume(ctx, key, rule, k, now, FixedWindow, attempts)
}

// give returns what the lease holds to its window's counter, guarded on
// the window (its start) and on the count holding it, so that a window
// opened since is never credited. The units leave the lease first: a
// failed write loses them (under-admits), never spends them twice. On
// Secondary storage the guard is the counter's tag (driver.LeaseReturner)
// and the count; a storage without tags has no guard that tells two
// windows of a counter apart, so the units are kept until the window ends,
// or dropped when all is set (Close).
func (ls *leaser) give(ctx context.Context, le *lease, now int64, all bool) error {
	n := le.avail
	s, isDB := ls.store.(*dbStorage)
	switch {
	case n == 0:
		return nil
	case now >= le.end:
		ls.lapse(le)
		return nil
	case !isDB:
		sec, _ := ls.store.(*secondaryStorage)
		if r := sec.returner(); r != nil && le.tag > 0 {
			ls.lapse(le)
			_, err := r.ReturnClaimed(ctx, SecondaryPrefix+le.key, n, le.tag)
			return err
		}
		if all {
			ls.lapse(le)
		}
		return nil
	}
	ls.lapse(le)
	_, _, err := s.db.IncrementOne(ctx, core.IncrementRequest{Model: model,
		Where:     []core.Where{core.Eq("key", le.key), core.Eq("lastRequest", le.start), core.Gte("count", n)},
		Increment: map[string]int64{"count": -n}})
	return err
}

// sweep returns the rest of every lease unused for the lease time (all:
// of every lease, and no more are made: Close), and forgets the leases
// that hold nothing and whose window is over.
func (ls *leaser) sweep(ctx context.Context, now int64, all bool) error {
	ls.mu.Lock()
	if all {
		ls.closed = true
	}
	keys := make([]lineKey, 0, len(ls.leases))
	list := make([]*lease, 0, len(ls.leases))
	for lk, le := range ls.leases {
		keys, list = append(keys, lk), append(list, le)
	}
	ls.mu.Unlock()
	var errs []error
	for i, le := range list {
		if err := le.lock(ctx); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if all || now-le.used >= ls.idle || now >= le.end {
			if err := ls.give(ctx, le, now, all); err != nil {
				errs = append(errs, driver.WrapKey("ratelimit: returning a lease", le.key, err))
			}
			le.block = ls.firstBlock()
		}
		if le.avail == 0 && (all || now >= le.end) {
			ls.mu.Lock()
			delete(ls.leases, keys[i])
			ls.mu.Unlock()
		}
		le.unlock()
	}
	return errors.Join(errs...)
}

// forget drops key's leases unreturned: [Limiter.Reset] cleared the
// counter they were claimed from.
func (ls *leaser) forget(key string) {
	ls.mu.Lock()
	var list []*lease
	for lk, le := range ls.leases {
		if lk.key == key {
			list = append(list, le)
			delete(ls.leases, lk)
		}
	}
	ls.mu.Unlock()
	for _, le := range list {
		le.gate <- struct{}{}
		ls.lapse(le)
		le.unlock()
	}
}

// peeked adds what key's lease holds to a peek's state: those units are
// spent in the counter and still this limiter's to admit.
func (ls *leaser) peeked(key string, rule Rule, now int64, st state) state {
	if n := ls.heldFor(key, rule); n > 0 && now < st.reset {
		st.count = max(st.count-n, 0)
		st.allowed = st.allowed || n >= 1
	}
	return st
}

// heldFor reports what key's lease under rule holds.
func (ls *leaser) heldFor(key string, rule Rule) int64 {
	if ls == nil {
		return 0
	}
	ls.mu.Lock()
	le := ls.leases[lineKey{key: key, rule: rule, mode: FixedWindow}]
	ls.mu.Unlock()
	if le == nil {
		return 0
	}
	return le.shown.Load()
}

// Leased reports how many units l holds in leases ([WithLeases]) and has not
// spent, over every key: what it may under-admit at most. It is 0 without
// leases.
func (l *Limiter) Leased() int64 {
	if l == nil || l.leases == nil {
		return 0
	}
	return l.leases.held.Load()
}
