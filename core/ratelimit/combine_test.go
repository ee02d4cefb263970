package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// gatedDB is the memory adapter with its IncrementOne calls counted and,
// while held, stopped until the test lets them through: a write in flight
// for as long as the test needs, so that batches form deterministically.
type gatedDB struct {
	*memory.Memory
	writes atomic.Int64 // IncrementOne calls
	held   atomic.Int64 // calls waiting at the gate
	hung   atomic.Bool  // past the gate, calls wait for their context to end, then fail
	panics atomic.Bool  // past the gate, calls panic
	slow   int          // Gosched calls before each write: a write that takes a while, so requests overlap it

	mu     sync.Mutex
	tokens chan struct{} // nil: calls pass
}

func (g *gatedDB) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	g.writes.Add(1)
	g.mu.Lock()
	tokens := g.tokens
	g.mu.Unlock()
	if tokens != nil {
		g.held.Add(1)
		<-tokens
		g.held.Add(-1)
	}
	for range g.slow {
		runtime.Gosched()
	}
	if g.panics.Load() {
		panic("adapter bug")
	}
	if g.hung.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return g.Memory.IncrementOne(ctx, t, where, inc, set)
}

// hold stops every IncrementOne from now on at the gate.
func (g *gatedDB) hold() {
	g.mu.Lock()
	g.tokens = make(chan struct{})
	g.mu.Unlock()
}

// step lets one held call through.
func (g *gatedDB) step() { g.tokens <- struct{}{} }

// open lets every call through, held ones included.
func (g *gatedDB) open() {
	g.mu.Lock()
	close(g.tokens)
	g.tokens = nil
	g.mu.Unlock()
}

// eventually waits, yielding, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		runtime.Gosched()
	}
}

// cluster is several limiters ("processes") with write combining sharing
// one database, on a clock that stands still unless moved.
type cluster struct {
	db    *core.DB
	g     *gatedDB
	clock *clock
	procs []*ratelimit.Limiter
}

func newCluster(t *testing.T, procs int, fallback bool, opts ...ratelimit.Option) *cluster {
	t.Helper()
	g := &gatedDB{Memory: memory.New()}
	var a driver.Adapter = g
	if fallback {
		a = g.WithoutIncrementOne() // the memory store without IncrementOne: writes are uncounted
	}
	db, err := core.New(a)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{db: db, g: g, clock: newClock()}
	opts = append([]ratelimit.Option{ratelimit.WithClock(c.clock.Now), ratelimit.WithWriteCombining()}, opts...)
	for range procs {
		c.procs = append(c.procs, newLimiter(t, ratelimit.Database(db), opts...))
	}
	return c
}

// stored returns the key's stored count.
func (c *cluster) stored(t *testing.T, key string) int64 {
	t.Helper()
	row, ok, err := c.db.FindOne(context.Background(), core.ModelRateLimit, core.Eq("key", key))
	if err != nil || !ok {
		t.Fatalf("reading %q: found %v, %v", key, ok, err)
	}
	return row.Int("count")
}

func (c *cluster) queued() int {
	n := 0
	for _, l := range c.procs {
		n += ratelimit.Queued(l)
	}
	return n
}

// outcome is one request of a burst and its answer.
type outcome struct {
	cost int64
	d    ratelimit.Decision
	err  error
}

// burst sends n requests on key at once, request i through limiter
// i mod procs with cost(i). With forced set, every write is held until
// each limiter has one write in flight and every other request queued
// behind it, so each limiter then serves its queue as one batch.
func (c *cluster) burst(t *testing.T, key string, rule ratelimit.Rule, n int, cost func(int) int64, forced bool) []outcome {
	t.Helper()
	outs := make([]outcome, n)
	if forced {
		c.g.hold()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testrace.Release(n, func(i int) {
			outs[i].cost = cost(i)
			outs[i].d, outs[i].err = c.procs[i%len(c.procs)].ConsumeN(context.Background(), key, rule, outs[i].cost)
		})
	}()
	if forced {
		p := len(c.procs)
		eventually(t, fmt.Sprintf("%d writes are in flight and %d requests queued", p, n-p), func() bool {
			return c.g.held.Load() == int64(p) && c.queued() == n-p
		})
		c.g.open()
	}
	<-done
	return outs
}

// prefill spends n units of key one request at a time.
func (c *cluster) prefill(t *testing.T, key string, rule ratelimit.Rule, n int) []outcome {
	t.Helper()
	outs := make([]outcome, n)
	for i := range outs {
		outs[i].cost = 1
		if outs[i].d, outs[i].err = c.procs[0].Consume(context.Background(), key, rule); !outs[i].d.Allowed {
			t.Fatalf("prefill %d: %+v, %v", i, outs[i].d, outs[i].err)
		}
	}
	return outs
}

// exactness returns what is wrong with the outcomes of a burst in one
// window on a key whose stored count is stored: errors, an admitted total
// other than the stored count or above max, a denied request that would
// have fit (fewer admitted than the limit allows), and admitted requests
// whose counts are not those of some serial order: each admitted request's
// count (max − Remaining) ends its own span of cost units, and the spans
// must tile 0..stored with no gap or overlap.
func exactness(max, stored int64, outs []outcome) []string {
	var bad []string
	type span struct{ from, to int64 }
	var spans []span
	var sum int64
	for i, o := range outs {
		switch {
		case o.err != nil:
			bad = append(bad, fmt.Sprintf("request %d: %v", i, o.err))
		case o.d.Allowed:
			sum += o.cost
			end := max - o.d.Remaining
			spans = append(spans, span{end - o.cost, end})
		case o.cost <= max-stored:
			bad = append(bad, fmt.Sprintf("request %d of cost %d denied with %d of %d units left", i, o.cost, max-stored, max))
		}
	}
	if sum != stored || stored > max {
		bad = append(bad, fmt.Sprintf("admitted %d units, stored count %d, max %d", sum, stored, max))
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.from - b.from) })
	var at int64
	for _, s := range spans {
		if s.from != at {
			bad = append(bad, fmt.Sprintf("admitted counts are no serial order: a span %d..%d follows %d", s.from, s.to, at))
			break
		}
		at = s.to
	}
	return bad
}

func unit(int) int64 { return 1 }

// mixed costs 1 to 4.
func mixed(i int) int64 { return int64(1 + i%4) }

// TestWriteCombiningIsExact: 200 requests released at once on a limit of
// 50, over 2 to 4 limiters ("processes") sharing one database, each
// combining its own callers: exactly 50 admitted, a stored count of 50,
// and each admitted request told the Remaining of its place in one serial
// order. Unit and mixed costs, both window modes, native IncrementOne and
// the transaction fallback; in the next window again.
func TestWriteCombiningIsExact(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Minute, Max: 50}
	for _, fallback := range []bool{false, true} {
		for _, mode := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.BetterAuthWindow} {
			for procs := 2; procs <= 4; procs++ {
				name := fmt.Sprintf("fallback=%v/mode=%d/procs=%d", fallback, mode, procs)
				t.Run(name, func(t *testing.T) {
					c := newCluster(t, procs, fallback, ratelimit.WithMode(mode))
					c.g.slow = 20
					for round := range 6 {
						key := fmt.Sprint("hot", round/2)
						c.clock.Set(time.Duration(round%2) * rule.Window)
						cost := unit
						if round >= 4 {
							cost = mixed
						}
						outs := c.burst(t, key, rule, 200, cost, false)
						stored := c.stored(t, key)
						for _, p := range exactness(rule.Max, stored, outs) {
							t.Errorf("round %d: %s", round, p)
						}
						if cost(0) == 1 && stored != rule.Max {
							t.Errorf("round %d: stored count %d, want %d", round, stored, rule.Max)
						}
						reset := c.clock.Now().Add(rule.Window)
						for i, o := range outs {
							if !o.d.Reset.Equal(reset) {
								t.Errorf("round %d, request %d: reset %v, want %v", round, i, o.d.Reset, reset)
								break
							}
						}
					}
					if !fallback {
						t.Logf("%d IncrementOne calls for 1200 decisions", c.g.writes.Load())
					}
				})
			}
		}
	}
}

// TestWriteCombiningForcedBatches fills 10 of 50 units, then holds the
// writes until every request but one per limiter is queued, so each
// limiter serves 49 callers in combined writes whose sum cannot all fit:
// the split path. Exactly 50 admitted, in far fewer writes than decisions.
func TestWriteCombiningForcedBatches(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Minute, Max: 50}
	for _, tc := range []struct {
		name string
		cost func(int) int64
	}{{"unit", unit}, {"mixed", mixed}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 4, false)
			outs := c.prefill(t, "hot", rule, 10)
			before := c.g.writes.Load()
			outs = append(outs, c.burst(t, "hot", rule, 200, tc.cost, true)...)
			writes := c.g.writes.Load() - before
			stored := c.stored(t, "hot")
			for _, p := range exactness(rule.Max, stored, outs) {
				t.Error(p)
			}
			if tc.name == "unit" && stored != rule.Max {
				t.Errorf("stored count %d, want %d", stored, rule.Max)
			}
			// Per limiter: its first request's increment, and a few claims
			// for the batch of the other 49; without combining each of the
			// 200 requests makes at least one.
			if writes > 40 {
				t.Errorf("%d IncrementOne calls for 200 decisions: the writes were not combined", writes)
			}
			t.Logf("%d IncrementOne calls for 200 decisions", writes)
		})
	}
}

// TestBrokenCombinerIsCaught: a combiner whose guard ignores the claim's
// size (count ≤ max − 1 instead of max − k) admits a whole batch past the
// limit, and the exactness check above reports it. The key starts with 10
// units spent, so the first batch of 49 claims more than the 40 left
// whichever limiter writes first.
func TestBrokenCombinerIsCaught(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Minute, Max: 50}
	c := newCluster(t, 4, false)
	for _, l := range c.procs {
		ratelimit.BreakCombinedGuard(l)
	}
	outs := c.prefill(t, "hot", rule, 10)
	outs = append(outs, c.burst(t, "hot", rule, 200, unit, true)...)
	stored := c.stored(t, "hot")
	problems := exactness(rule.Max, stored, outs)
	if len(problems) == 0 {
		t.Fatalf("a combiner guarding on count ≤ max − 1 passed the exactness check (stored count %d)", stored)
	}
	t.Logf("caught: stored count %d; %v", stored, problems[0])
}

// TestCombiningTakesOneWritePerBatch: 199 callers queued behind one write
// go in one further write when they all fit.
func TestCombiningTakesOneWritePerBatch(t *testing.T) {
	c := newCluster(t, 1, false)
	rule := ratelimit.Rule{Window: time.Minute, Max: 1000}
	outs := c.burst(t, "hot", rule, 200, unit, true)
	if p := exactness(rule.Max, c.stored(t, "hot"), outs); len(p) > 0 || c.stored(t, "hot") != 200 {
		t.Fatalf("stored %d, %v", c.stored(t, "hot"), p)
	}
	// The first caller's increment (no row yet) and one claim for the
	// other 199.
	if w := c.g.writes.Load(); w != 2 {
		t.Errorf("%d IncrementOne calls for 200 decisions, want 2", w)
	}
}

// followers are n callers on "hot" (a minute's window of 100) queued
// behind a first caller whose write the gate holds, each with a context of
// its own.
type followers struct {
	leader  chan error // the first caller's error
	outs    []outcome
	cancels []context.CancelFunc
	wg      sync.WaitGroup // the followers
}

func queueFollowers(t *testing.T, c *cluster, n int) *followers {
	t.Helper()
	l := c.procs[0]
	rule := ratelimit.Rule{Window: time.Minute, Max: 100}
	c.g.hold()
	q := &followers{leader: make(chan error, 1), outs: make([]outcome, n), cancels: make([]context.CancelFunc, n)}
	go func() {
		_, err := l.Consume(context.Background(), "hot", rule)
		q.leader <- err
	}()
	eventually(t, "the first write is in flight", func() bool { return c.g.held.Load() == 1 })
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		q.cancels[i] = cancel
		q.wg.Go(func() { q.outs[i].d, q.outs[i].err = l.Consume(ctx, "hot", rule) })
	}
	eventually(t, "every follower is queued", func() bool { return ratelimit.Queued(l) == n })
	return q
}

// TestCancelledFollowersAreNotCounted: callers whose context ends while
// they wait for the next write leave with their context's error and
// spend nothing.
func TestCancelledFollowersAreNotCounted(t *testing.T) {
	c := newCluster(t, 1, false)
	const n = 20
	q := queueFollowers(t, c, n)
	for i := 0; i < n; i += 2 {
		q.cancels[i]()
	}
	eventually(t, "the cancelled followers have left the queue", func() bool { return ratelimit.Queued(c.procs[0]) == n/2 })
	c.g.open()
	q.wg.Wait()
	if err := <-q.leader; err != nil {
		t.Fatal(err)
	}
	cancels := q.cancels
	for i, o := range q.outs {
		cancelled := i%2 == 0
		switch {
		case cancelled && (o.d.Allowed || !errors.Is(o.err, context.Canceled)):
			t.Errorf("cancelled follower %d: %+v, %v; want denied with context.Canceled", i, o.d, o.err)
		case !cancelled && (!o.d.Allowed || o.err != nil):
			t.Errorf("live follower %d: %+v, %v; want allowed", i, o.d, o.err)
		}
		cancels[i]()
	}
	if got := c.stored(t, "hot"); got != 1+n/2 {
		t.Errorf("stored count %d, want %d (the first caller and the live followers)", got, 1+n/2)
	}
}

// TestClaimedFollowersKeepTheirDecision: once a caller's write has
// started, that write decides it: it hangs up mid-write and is still told
// the truth (admitted, and counted), and no caller's hang-up fails the
// write for the others, not even the one running it. A write that hangs
// ends once every caller in it has gone, counting nobody.
func TestClaimedFollowersKeepTheirDecision(t *testing.T) {
	for _, everyone := range []bool{false, true} {
		t.Run(fmt.Sprintf("everyone_gone=%v", everyone), func(t *testing.T) {
			c := newCluster(t, 1, false)
			const n = 5
			q := queueFollowers(t, c, n)
			c.g.step() // the first write; the followers' combined write follows
			if err := <-q.leader; err != nil {
				t.Fatal(err)
			}
			eventually(t, "the followers' write is in flight", func() bool { return c.g.held.Load() == 1 && ratelimit.Queued(c.procs[0]) == 0 })
			outs, cancels := q.outs, q.cancels
			gone := n - 1 // the last stays
			if everyone {
				gone = n
			}
			if everyone {
				c.g.hung.Store(true) // the database hangs: only the context ends the write
			}
			for i := range gone {
				cancels[i]()
			}
			c.g.open()
			q.wg.Wait()
			for i, o := range outs {
				switch {
				case everyone && (o.d.Allowed || !errors.Is(o.err, context.Canceled)):
					t.Errorf("follower %d: %+v, %v; want denied with context.Canceled", i, o.d, o.err)
				case !everyone && (!o.d.Allowed || o.err != nil):
					t.Errorf("follower %d: %+v, %v; want allowed, its write having started before it hung up", i, o.d, o.err)
				}
				cancels[i]()
			}
			want := int64(1 + n)
			if everyone {
				want = 1
			}
			if got := c.stored(t, "hot"); got != want {
				t.Errorf("stored count %d, want %d", got, want)
			}
		})
	}
}

// TestCombinedBatchOpensTheNextWindow: a batch whose callers read the
// clock after the window ended finds no live window; it resets the row to
// the claim of those that fit, and the rest are denied at that state:
// exactly max.
func TestCombinedBatchOpensTheNextWindow(t *testing.T) {
	c := newCluster(t, 1, false)
	l := c.procs[0]
	rule := ratelimit.Rule{Window: time.Minute, Max: 50}
	ctx := context.Background()
	for range 10 {
		if d, err := l.Consume(ctx, "hot", rule); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	c.g.hold()
	leader := make(chan outcome, 1)
	go func() {
		d, err := l.Consume(ctx, "hot", rule) // at t0: the 11th of the first window
		leader <- outcome{1, d, err}
	}()
	eventually(t, "the first write is in flight", func() bool { return c.g.held.Load() == 1 })
	c.clock.Set(rule.Window) // the followers read the clock in the next window
	const n = 60
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { outs[i].cost = 1; outs[i].d, outs[i].err = l.Consume(ctx, "hot", rule) })
	}
	eventually(t, "every follower is queued", func() bool { return ratelimit.Queued(l) == n })
	c.g.open()
	wg.Wait()
	if o := <-leader; o.err != nil || !o.d.Allowed || o.d.Remaining != 39 || !o.d.Reset.Equal(t0.Add(rule.Window)) {
		t.Errorf("the first window's last caller: %+v, %v", o.d, o.err)
	}
	stored := c.stored(t, "hot")
	for _, p := range exactness(rule.Max, stored, outs) {
		t.Error(p)
	}
	if stored != rule.Max {
		t.Errorf("stored count %d, want %d", stored, rule.Max)
	}
	for i, o := range outs {
		if want := t0.Add(2 * rule.Window); !o.d.Reset.Equal(want) {
			t.Errorf("follower %d: reset %v, want %v (the next window's end)", i, o.d.Reset, want)
		}
	}
}

// TestPanickingStorageFreesTheKey: a storage that panics in a combined
// write (an HTTP server recovers a handler's panic and goes on) leaves no
// caller waiting forever and no key stuck behind a write that never ends.
func TestPanickingStorageFreesTheKey(t *testing.T) {
	c := newCluster(t, 1, false)
	l := c.procs[0]
	rule := ratelimit.Rule{Window: time.Minute, Max: 100}
	ctx := context.Background()
	consume := func() (o outcome) {
		defer func() {
			if p := recover(); p != nil {
				o.err = fmt.Errorf("panic: %v", p)
			}
		}()
		o.d, o.err = l.Consume(ctx, "hot", rule)
		return o
	}
	c.g.hold()
	leader := make(chan outcome, 1)
	go func() { leader <- consume() }()
	eventually(t, "the first write is in flight", func() bool { return c.g.held.Load() == 1 })
	const n = 5
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { outs[i] = consume() })
	}
	eventually(t, "every follower is queued", func() bool { return ratelimit.Queued(l) == n })
	c.g.panics.Store(true)
	c.g.open()
	wg.Wait()
	if o := <-leader; o.err == nil || o.d.Allowed {
		t.Errorf("first caller: %+v, %v; want the panic", o.d, o.err)
	}
	for i, o := range outs {
		if o.err == nil || o.d.Allowed {
			t.Errorf("follower %d: %+v, %v; want an error", i, o.d, o.err)
		}
	}
	c.g.panics.Store(false)
	if o := consume(); o.err != nil || !o.d.Allowed {
		t.Errorf("after the panic: %+v, %v; want allowed", o.d, o.err)
	}
}

// TestWriteCombiningNeedsDatabaseStorage: the option on a storage it does
// not serve is refused, not ignored.
func TestWriteCombiningNeedsDatabaseStorage(t *testing.T) {
	_, err := ratelimit.New(ratelimit.Memory(10), ratelimit.WithWriteCombining())
	if !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("err = %v, want core.ErrInvalid", err)
	}
}
