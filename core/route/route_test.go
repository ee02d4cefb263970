package route_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testclock"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/core/route"
)

// node is one node of a simulated cluster: the nodes share one memory
// store (synchronous replication), each counts the calls it answered, and
// a node set down fails every call with core.ErrUnavailable.
type node struct {
	*memory.Memory
	down   atomic.Bool
	calls  atomic.Int64
	seq    atomic.Int64 // IncrementOne calls so far
	failAt int64        // the IncrementOne call (from 1) that fails with core.ErrUnavailable; 0 for none
}

var errNodeDown = fmt.Errorf("node down: %w", core.ErrUnavailable)

func (n *node) answer() error {
	if n.down.Load() {
		return errNodeDown
	}
	n.calls.Add(1)
	return nil
}

func (n *node) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	if err := n.answer(); err != nil {
		return nil, err
	}
	if n.seq.Add(1) == n.failAt {
		return nil, errNodeDown // before anything is written, as a refused connection
	}
	return n.Memory.IncrementOne(ctx, t, where, inc, set)
}

func (n *node) Create(ctx context.Context, t *driver.Table, values []driver.Assignment) (driver.Record, error) {
	if err := n.answer(); err != nil {
		return nil, err
	}
	return n.Memory.Create(ctx, t, values)
}

func (n *node) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	if err := n.answer(); err != nil {
		return nil, err
	}
	return n.Memory.FindOne(ctx, t, where)
}

// bare hides every optional interface of the adapter it holds.
type bare struct{ driver.Adapter }

// mustDB wraps a in a core.DB or stops the test.
func mustDB(t testing.TB, a driver.Adapter) *core.DB {
	t.Helper()
	db, err := core.New(a)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	return db
}

func cluster(n int) ([]*node, []driver.Adapter) {
	m := memory.New()
	var nodes []*node
	var as []driver.Adapter
	for range n {
		x := &node{Memory: m}
		nodes, as = append(nodes, x), append(as, x)
	}
	return nodes, as
}

func routed(t *testing.T, as []driver.Adapter, opts ...route.Option) (*route.Router, *core.DB) {
	t.Helper()
	r, err := route.New(as, opts...)
	if err != nil {
		t.Fatal(err)
	}
	db, err := core.New(r)
	if err != nil {
		t.Fatal(err)
	}
	return r, db
}

func take(key string) core.IncrementRequest {
	return core.IncrementRequest{Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", key), core.Gt("count", 0)},
		Increment: map[string]int64{"count": -1}}
}

// TestRouteStable: every call about one key goes to one node, the same in
// every Router over the same nodes, and keys spread over all the nodes.
func TestRouteStable(t *testing.T) {
	ctx := t.Context()
	nodes, as := cluster(3)
	r1, db := routed(t, as)
	r2, _ := routed(t, as)
	tb, _ := db.Schema().Table(core.ModelRateLimit)
	used := map[int]bool{}
	for i := range 30 {
		key := fmt.Sprintf("key-%d", i)
		where := []driver.Where{{Column: "key", Op: driver.OpEq, Value: key}}
		home := r1.NodeOf(tb, where)
		if other := r2.NodeOf(tb, where); other != home {
			t.Fatalf("%s: node %d in one router, %d in another", key, home, other)
		}
		used[home] = true
		before := nodes[home].calls.Load()
		if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": key, "count": 5}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, ok, err := db.IncrementOne(ctx, take(key)); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		if got := nodes[home].calls.Load() - before; got != 4 {
			t.Fatalf("%s: its home node %d answered %d of its 4 calls", key, home, got)
		}
	}
	if len(used) != 3 {
		t.Fatalf("30 keys went to %d of 3 nodes", len(used))
	}
}

// TestRouteFailover: a call on a node that is down fails with
// core.ErrUnavailable and is not sent elsewhere; the key's next calls go to
// the next node until the retry interval ends, then home again.
func TestRouteFailover(t *testing.T) {
	ctx := t.Context()
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	nodes, as := cluster(3)
	r, db := routed(t, as, route.WithRetryAfter(time.Second), route.WithClock(clock.Now))
	tb, _ := db.Schema().Table(core.ModelRateLimit)
	where := []driver.Where{{Column: "key", Op: driver.OpEq, Value: "k"}}
	home := r.NodeOf(tb, where)
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k", "count": 10}); err != nil {
		t.Fatal(err)
	}
	nodes[home].down.Store(true)
	if _, _, err := db.IncrementOne(ctx, take("k")); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("the call in flight on the node that went down: %v, want core.ErrUnavailable", err)
	}
	next := (home + 1) % 3
	if got := r.NodeOf(tb, where); got != next {
		t.Fatalf("while node %d is down the key goes to node %d, want %d", home, got, next)
	}
	for range 3 {
		if _, ok, err := db.IncrementOne(ctx, take("k")); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	st := r.Nodes()
	if !st[home].Down || st[home].Unavailable != 1 || st[next].Moved != 3 {
		t.Fatalf("stats %+v: want node %d down with 1 unavailable call, node %d with 3 moved", st, home, next)
	}
	row, _, _ := db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "k"))
	if row.Int("count") != 7 {
		t.Fatalf("count %d, want 7: the failed call took nothing, the 3 moved ones one each", row.Int("count"))
	}
	nodes[home].down.Store(false)
	clock.Advance(time.Second)
	if got := r.NodeOf(tb, where); got != home || r.Nodes()[home].Down {
		t.Fatalf("after the retry interval the key goes to node %d, want its home %d", got, home)
	}
}

// TestRouteRace: callers released at once over three routers on three
// nodes take exactly the budget while each node in turn fails one call
// with core.ErrUnavailable (the home node, then the next one the key moved
// to, then the last): those calls, and no others, fail, and their callers
// are told so; each tries again and is routed to the next node. The proof
// (applied=true) has the nodes fail after applying the write, as a
// connection lost after the commit: a router or caller that sends such a
// call again takes a unit twice, and the race catches it.
func TestRouteRace(t *testing.T) {
	for _, applied := range []bool{false, true} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			ctx := t.Context()
			nodes, as := cluster(3)
			for i, n := range nodes {
				n.failAt = 5
				if applied {
					as[i] = &appliedThenDown{node: n}
				}
			}
			var dbs []*core.DB
			for range 3 {
				_, db := routed(t, as)
				dbs = append(dbs, db)
			}
			const budget, callers = 40, 128
			if _, err := dbs[0].Create(ctx, core.ModelRateLimit, map[string]any{"key": "hot", "count": budget}); err != nil {
				t.Fatal(err)
			}
			var won, unavailable, other atomic.Int64
			testrace.Release(callers, func(i int) {
				for {
					_, ok, err := dbs[i%3].IncrementOne(ctx, take("hot"))
					switch {
					case errors.Is(err, core.ErrUnavailable):
						unavailable.Add(1)
						continue // told it failed: try again
					case err != nil:
						other.Add(1)
					case ok:
						won.Add(1)
					}
					return
				}
			})
			row, _, _ := dbs[0].FindOne(ctx, core.ModelRateLimit, core.Eq("key", "hot"))
			exact := won.Load() == budget && row.Int("count") == 0 && other.Load() == 0 && unavailable.Load() >= 1
			if exact == applied {
				t.Fatalf("applied=%v: %d won of a budget of %d, count %d left, %d unavailable, %d other errors",
					applied, won.Load(), budget, row.Int("count"), unavailable.Load(), other.Load())
			}
		})
	}
}

// appliedThenDown is TestRouteRace's broken node: the call that fails
// writes first.
type appliedThenDown struct{ *node }

func (n *appliedThenDown) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	rec, err := n.Memory.IncrementOne(ctx, t, where, inc, set)
	if n.seq.Add(1) == n.failAt && err == nil && rec != nil {
		return nil, errNodeDown
	}
	return rec, err
}

// TestRouteInvalid: Route refuses what it cannot route, before any call.
func TestRouteInvalid(t *testing.T) {
	_, as := cluster(2)
	for name, f := range map[string]func() (*route.Router, error){
		"no nodes":   func() (*route.Router, error) { return route.New(nil) },
		"nil node":   func() (*route.Router, error) { return route.New([]driver.Adapter{as[0], nil}) },
		"bare node":  func() (*route.Router, error) { return route.New([]driver.Adapter{bare{as[0]}}) },
		"nil option": func() (*route.Router, error) { return route.New(as, nil) },
		"retry 0":    func() (*route.Router, error) { return route.New(as, route.WithRetryAfter(0)) },
	} {
		if _, err := f(); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%s: %v, want core.ErrInvalid", name, err)
		}
	}
}

// TestRouteReportsTheNode: the node that answered is in the context's
// driver.RoundTrips, and so in the limiter's observed events; -1 without a
// router.
func TestRouteReportsTheNode(t *testing.T) {
	_, as := cluster(3)
	r, db := routed(t, as)
	tb, _ := db.Schema().Table(core.ModelRateLimit)
	home := r.NodeOf(tb, []driver.Where{{Column: "key", Op: driver.OpEq, Value: "k"}})
	var nodes []int
	observe := ratelimit.WithObserver(func(_ context.Context, e ratelimit.Event) { nodes = append(nodes, e.Node) })
	for _, d := range []*core.DB{db, mustDB(t, as[0])} {
		l, err := ratelimit.New(ratelimit.Database(d), observe)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Consume(t.Context(), "k", ratelimit.Rule{Window: time.Minute, Max: 5}); err != nil {
			t.Fatal(err)
		}
	}
	if len(nodes) != 2 || nodes[0] != home || nodes[1] != -1 {
		t.Fatalf("observed nodes %v, want [%d -1]: the routed key's home, then none without a router", nodes, home)
	}
}
