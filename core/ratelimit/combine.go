package ratelimit

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// combiner folds the concurrent decisions of one process on one key into
// guarded writes that claim their sum (see "Write combining" in the package
// documentation). Its exactness rests on two rules: a caller is admitted
// only by a guarded write that leaves the count at most max, and denied
// only at a state of the row, read or returned by a write, in which its
// cost does not fit.
type combiner struct {
	s *dbStorage

	mu    sync.Mutex // guards lines and every line's fields
	lines map[lineKey]*line

	// bound is the guard of a claim of k units: the most the count may be
	// before it. Tests replace it with a broken one to show that the
	// exactness tests catch it.
	bound func(max, k int64) int64
}

func newCombiner(s *dbStorage) *combiner {
	return &combiner{s: s, lines: map[lineKey]*line{}, bound: func(max, k int64) int64 { return max - k }}
}

// lineKey is what callers must share to go in one write: the same row and
// the same guard.
type lineKey struct {
	key  string
	rule Rule
	mode Mode
}

// line is one key's state while a write for it is in flight (busy); the
// callers that arrive meanwhile queue for the next write. An idle line is
// deleted, so the map holds only keys with a write in flight.
type line struct {
	busy  bool
	queue []*waiter
}

// waiter is a caller queued on a busy line.
type waiter struct {
	ctx       context.Context
	cost, now int64
	// ready is closed when st and err hold the caller's decision, or when
	// lead is set: the caller then runs the next write for lead (itself
	// first).
	ready chan struct{}
	lead  []*waiter
	st    state
	err   error
}

// consume decides like dbStorage.consume. A caller that finds no write in
// flight for its key takes the ordinary path at once, so a key that is not
// hot pays no wait; one that finds a write in flight queues and goes in
// the next write, together with everyone else queued by then.
func (c *combiner) consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, attempts int) (state, error) {
	// The checks run before queueing: a batch never calls them for its
	// followers.
	if err := c.s.prepare(ctx, key); err != nil {
		return state{}, err
	}
	if err := ctx.Err(); err != nil {
		return state{}, err
	}
	lk := lineKey{key: key, rule: rule, mode: m}
	c.mu.Lock()
	ln := c.lines[lk]
	if ln == nil {
		ln = &line{}
		c.lines[lk] = ln
	}
	if !ln.busy {
		ln.busy = true
		c.mu.Unlock()
		// The first caller of a busy spell goes alone, on the ordinary
		// path, which also opens and resets windows. The hand-off is
		// deferred so that even a panicking storage frees the line.
		defer c.handOff(lk, ln)
		return c.s.consume(ctx, key, rule, cost, now, m, attempts)
	}
	w := &waiter{ctx: ctx, cost: cost, now: now, ready: make(chan struct{})}
	ln.queue = append(ln.queue, w)
	c.mu.Unlock()
	select {
	case <-w.ready:
	case <-ctx.Done():
		c.mu.Lock()
		if i := slices.Index(ln.queue, w); i >= 0 {
			// Still queued: no write holds its share, so it leaves uncounted.
			ln.queue = slices.Delete(ln.queue, i, i+1)
			c.mu.Unlock()
			return state{}, ctx.Err()
		}
		c.mu.Unlock()
		// Already taken into a write: that write decides it, and its
		// decision stands (see the package documentation).
		<-w.ready
	}
	if w.lead != nil {
		defer c.handOff(lk, ln)
		c.run(lk, w.lead, attempts)
	}
	return w.st, w.err
}

// handOff ends a write on ln: the callers queued meanwhile become the next
// batch, led by the first of them, or the line goes idle. Callers whose
// context ended while queued are turned away uncounted.
func (c *combiner) handOff(lk lineKey, ln *line) {
	c.mu.Lock()
	batch := ln.queue[:0]
	var gone []*waiter
	for _, w := range ln.queue {
		if w.ctx.Err() != nil {
			gone = append(gone, w)
		} else {
			batch = append(batch, w)
		}
	}
	ln.queue = nil
	if len(batch) == 0 {
		ln.busy = false
		delete(c.lines, lk)
	} else {
		batch[0].lead = batch
		close(batch[0].ready)
	}
	c.mu.Unlock()
	for _, w := range gone {
		w.err = w.ctx.Err()
		close(w.ready)
	}
}

// run decides a batch, ws[0] being the caller running it, and hands each
// other caller its decision. Every caller is decided at the batch's latest
// clock reading: a window live then was live at each caller's own reading,
// and every reading was taken before the write.
func (c *combiner) run(lk lineKey, ws []*waiter, attempts int) {
	ctx, stop := batchContext(ws)
	defer func() {
		stop()
		p := recover()
		if p != nil {
			// The storage panicked: the callers not yet admitted get an
			// error rather than wait forever; the panic goes on in the
			// caller running the batch, as it would have without combining.
			for _, x := range ws {
				if !x.st.allowed {
					x.err = fmt.Errorf("the storage panicked during a combined write: %v", p)
				}
			}
		}
		for _, x := range ws[1:] {
			close(x.ready)
		}
		if p != nil {
			panic(p)
		}
	}()
	c.decide(ctx, lk, ws, attempts)
}

// decide claims, in as few guarded writes as it can, the units of every
// caller in ws that fits, and denies the others. Each claim goes through
// the counter-row protocol (database.go), which keeps what it learns of
// the row, and the attempts, from one claim to the next.
func (c *combiner) decide(ctx context.Context, lk lineKey, ws []*waiter, attempts int) {
	rule := lk.rule
	now := ws[0].now
	for _, x := range ws[1:] {
		now = max(now, x.now)
	}
	r := c.s.newClaim(lk.key, rule, lk.mode, now, attempts)
	pending := slices.Clone(ws)
	for len(pending) > 0 {
		room := rule.Max // unknown: try everyone who could fit at all
		if r.known {
			// Whoever does not fit the state seen is denied at that state,
			// as a lone request would be there.
			pending = slices.DeleteFunc(pending, func(x *waiter) bool {
				if x.cost > rule.Max-r.count {
					x.st = state{count: r.count, reset: r.last + r.w}
					return true
				}
				return false
			})
			room = rule.Max - r.count
		}
		// Claim the callers that fit the room, in arrival order; each of
		// them fits alone, so at least one is claimed. The sum stays at most
		// max, so it cannot overflow.
		var claim, rest []*waiter
		var k int64
		for _, x := range pending {
			if x.cost <= room-k {
				claim = append(claim, x)
				k += x.cost
			} else {
				rest = append(rest, x)
			}
		}
		if len(claim) == 0 {
			return
		}
		ok, err := c.s.claim(ctx, &r, k, c.bound(rule.Max, k))
		if err != nil {
			for _, x := range pending {
				x.err = err
			}
			return
		}
		if !ok {
			continue // r holds a state the claim does not fit: split again
		}
		// The claimed callers, served one after another in arrival order,
		// took the count from total − k to total.
		n := r.count - k
		for _, x := range claim {
			n += x.cost
			x.st = state{allowed: true, count: n, reset: r.last + r.w}
		}
		pending = rest
	}
}

// batchContext returns the context of a batch's writes: it carries the
// first caller's values and ends only once every caller's context has, so
// that no one caller hanging up fails the others' decisions.
func batchContext(ws []*waiter) (context.Context, func()) {
	if len(ws) == 1 {
		return ws[0].ctx, func() {}
	}
	base := context.WithoutCancel(ws[0].ctx)
	for _, w := range ws {
		if w.ctx.Done() == nil { // a caller that never gives up
			return base, func() {}
		}
	}
	ctx, cancel := context.WithCancel(base)
	var left atomic.Int64
	left.Store(int64(len(ws)))
	stops := make([]func() bool, len(ws))
	for i, w := range ws {
		stops[i] = context.AfterFunc(w.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}
