// Package route sends each row's calls to one node of a multi-primary
// cluster, such as MariaDB Galera: a [Router] is a driver.Adapter over one
// adapter per node, which [core.New] wraps as any other. It imports only
// core and core/driver; a program on one database never needs it.
package route

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Router is node-affine routing over the nodes of one multi-primary
// cluster, such as MariaDB Galera: a [driver.Adapter] over one adapter per
// node (one connection pool each) that sends every call about a row to one
// node, chosen by a stable hash of the value that names the row in the
// call (the where clause's equality on a unique column, such as a rate
// limit's key or an API key's hash; for Create, the value of the first
// unique column), so that the writes of a hot key queue on one node's
// row lock instead of failing each other's certification across nodes.
// Every process routes a key to the same node: the hash is FNV-1a of the
// column and the value, the node its remainder by the number of nodes.
//
// A call whose node fails with [core.ErrUnavailable] returns that error (its
// write may have been in flight: it is never sent again elsewhere), and
// the node is passed over for the retry interval ([WithRetryAfter], 1 s by
// default): its keys go to the next node in order until then. The first
// call after the interval tries the node again. Routing changes no
// outcome: the cluster replicates synchronously and certifies every
// write, so a key moved to another node is as exact there; it only takes
// the conflicts away. Transactions, and calls that name no row, go to the
// first available node.
//
// Wrap a Router in [core.New] as any adapter. Every node's adapter must
// implement [driver.Incrementer] and [driver.Transactor]; see
// [Router.Nodes] for what each node did.
type Router struct {
	nodes []routeNode
	retry time.Duration
	now   func() time.Time
	saves bool // every node's IncrementValue saves round trips
}

// routeNode is one node of a Router and what it did.
type routeNode struct {
	a           driver.Adapter
	inc         driver.Incrementer
	tx          driver.Transactor
	value       driver.ValueIncrementer // nil when the node's adapter has none
	downUntil   atomic.Int64            // unix nanoseconds; passed over until then
	calls       atomic.Int64
	unavailable atomic.Int64
	moved       atomic.Int64
}

// NodeStats is what one node of a [Router] did since the Router was made.
type NodeStats struct {
	// Calls is how many calls the node answered or failed.
	Calls int64
	// Unavailable is how many of them failed with [core.ErrUnavailable].
	Unavailable int64
	// Moved is how many calls the node took for another node that was
	// passed over as unavailable.
	Moved int64
	// Down is true while the node is passed over.
	Down bool
}

// Option configures [New].
type Option func(*Router)

// WithRetryAfter sets how long a node that failed with [core.ErrUnavailable]
// is passed over (1 s by default; at least 1 ms).
func WithRetryAfter(d time.Duration) Option { return func(r *Router) { r.retry = d } }

// WithClock sets the clock of the retry interval (time.Now by default),
// for tests.
func WithClock(now func() time.Time) Option { return func(r *Router) { r.now = now } }

// invalid is the error of New for a request refused before any node is
// used: a [*core.Error] of kind core.ErrInvalid, as core's own.
func invalid(format string, args ...any) error {
	return &core.Error{Op: "Route", Kind: core.ErrInvalid, Err: fmt.Errorf(format, args...)}
}

// New returns a Router over nodes, one adapter per node of one cluster,
// in an order every process shares. It fails with [ErrInvalid] for fewer
// than one node, a nil node, a node whose adapter lacks IncrementOne or
// transactions, a nil option or a retry interval under 1 ms.
func New(nodes []driver.Adapter, opts ...Option) (*Router, error) {
	r := &Router{retry: time.Second, now: time.Now, saves: true}
	for i, o := range opts {
		if o == nil {
			return nil, invalid("option %d is nil", i)
		}
		o(r)
	}
	if r.retry < time.Millisecond || r.now == nil {
		return nil, invalid("retry interval %v (want at least 1ms) or nil clock", r.retry)
	}
	if len(nodes) == 0 {
		return nil, invalid("no nodes")
	}
	r.nodes = make([]routeNode, len(nodes))
	for i, a := range nodes {
		inc, ok1 := a.(driver.Incrementer)
		tx, ok2 := a.(driver.Transactor)
		if a == nil || !ok1 || !ok2 {
			return nil, invalid("node %d: adapter %T must implement driver.Incrementer and driver.Transactor", i, a)
		}
		n := &r.nodes[i]
		n.a, n.inc, n.tx = a, inc, tx
		n.value, _ = a.(driver.ValueIncrementer)
		r.saves = r.saves && n.value != nil && n.value.ValueIncrementSaves()
	}
	return r, nil
}

// Nodes returns what each node did, in the order New was given them.
func (r *Router) Nodes() []NodeStats {
	now := r.now().UnixNano()
	out := make([]NodeStats, len(r.nodes))
	for i := range r.nodes {
		n := &r.nodes[i]
		out[i] = NodeStats{Calls: n.calls.Load(), Unavailable: n.unavailable.Load(), Moved: n.moved.Load(), Down: n.downUntil.Load() > now}
	}
	return out
}

// NodeOf returns the index of the node a call on t with where goes to now:
// its home node, or the next available one while that is passed over.
func (r *Router) NodeOf(t *driver.Table, where []driver.Where) int {
	i, _ := r.pick(homeOf(t, where, nil, len(r.nodes)))
	return i
}

// homeOf is the home node of a call: the hash of the value that names its
// row, or node 0 for a call that names none.
func homeOf(t *driver.Table, where []driver.Where, values []driver.Assignment, n int) int {
	col, v, ok := routingValue(t, where, values)
	if !ok || n == 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(col))
	h.Write([]byte{0})
	switch x := v.(type) {
	case string:
		h.Write([]byte(x))
	case []byte:
		h.Write(x)
	case int64:
		h.Write(strconv.AppendInt(nil, x, 10))
	default:
		fmt.Fprint(h, x)
	}
	return int(h.Sum64() % uint64(n))
}

// routingValue finds the value that names a call's row: an equality on a
// unique column, else on an indexed one, else on any column; for a
// Create, the first unique column's value.
func routingValue(t *driver.Table, where []driver.Where, values []driver.Assignment) (string, any, bool) {
	best, rank := -1, 0
	for i, w := range where {
		if w.Op != driver.OpEq || w.Value == nil {
			continue
		}
		r := 1
		if c, ok := t.ColumnByName(w.Column); ok && c.Field.Unique {
			r = 3
		} else if ok && c.Field.Index {
			r = 2
		}
		if r > rank {
			best, rank = i, r
		}
	}
	if best >= 0 {
		return where[best].Column, where[best].Value, true
	}
	for _, a := range values {
		if c, ok := t.ColumnByName(a.Column); ok && c.Field.Unique && a.Value != nil {
			return a.Column, a.Value, true
		}
	}
	return "", nil, false
}

// pick returns the first node from home on that is not passed over, and
// whether that is another than home; home itself when every node is.
func (r *Router) pick(home int) (int, bool) {
	now := r.now().UnixNano()
	for k := range r.nodes {
		i := (home + k) % len(r.nodes)
		if r.nodes[i].downUntil.Load() <= now {
			return i, k > 0
		}
	}
	return home, false
}

// on runs a call on the node for home and keeps its account: a failure
// with core.ErrUnavailable passes the node over for the retry interval. The
// node is recorded in ctx's [driver.RoundTrips] (the limiter's observer
// reports it as Event.Node).
func on[T any](ctx context.Context, r *Router, home int, call func(n *routeNode) (T, error)) (T, error) {
	i, moved := r.pick(home)
	driver.SetNode(ctx, i)
	n := &r.nodes[i]
	n.calls.Add(1)
	if moved {
		n.moved.Add(1)
	}
	out, err := call(n)
	if err != nil && errors.Is(err, core.ErrUnavailable) {
		n.unavailable.Add(1)
		n.downUntil.Store(r.now().Add(r.retry).UnixNano())
	}
	return out, err
}

// Create inserts the row on the node of its first unique column's value.
func (r *Router) Create(ctx context.Context, t *driver.Table, values []driver.Assignment) (driver.Record, error) {
	return on(ctx, r, homeOf(t, nil, values, len(r.nodes)), func(n *routeNode) (driver.Record, error) { return n.a.Create(ctx, t, values) })
}

// FindOne reads on the node of the row where names.
func (r *Router) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	return on(ctx, r, homeOf(t, where, nil, len(r.nodes)), func(n *routeNode) (driver.Record, error) { return n.a.FindOne(ctx, t, where) })
}

// FindMany reads on the node of the row where names.
func (r *Router) FindMany(ctx context.Context, t *driver.Table, where []driver.Where, opts driver.FindOptions) ([]driver.Record, error) {
	return on(ctx, r, homeOf(t, where, nil, len(r.nodes)), func(n *routeNode) ([]driver.Record, error) { return n.a.FindMany(ctx, t, where, opts) })
}

// Update writes on the node of the row where names.
func (r *Router) Update(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (driver.Record, error) {
	return on(ctx, r, homeOf(t, where, nil, len(r.nodes)), func(n *routeNode) (driver.Record, error) { return n.a.Update(ctx, t, where, set) })
}

// UpdateMany writes on the node of the row where names.
func (r *Router) UpdateMany(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (int64, error) {
	return on(ctx, r, homeOf(t, where, nil, len(r.nodes)), func(n *routeNode) (int64, error) { return n.a.UpdateMany(ctx, t, where, set) })
}

// Delete deletes on the node of the row where names.
func (r *Router) Delete(ctx context.Context, t *driver.Table, where []driver.Where) (bool, error) {
	return on(ctx, r, homeOf(t, where, nil, len(r.nodes)), func(n *routeNode) (bool, error) { return n.a.Delete(ctx, t, where) })
}

// DeleteMany deletes on the node of the row where names.
func (r *Router) DeleteMany(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	return on(ctx, r, homeOf(t, where, nil, len(r.nodes)), func(n *routeNode) (int64, error) { return n.a.DeleteMany(ctx, t, where) })
}

// Count counts on the node of the row where names.
func (r *Router) Count(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	return on(ctx, r, homeOf(t, where, nil, len(r.nodes)), func(n *routeNode) (int64, error) { return n.a.Count(ctx, t, where) })
}

// IncrementOne writes on the node of the row where names.
func (r *Router) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	return on(ctx, r, homeOf(t, where, nil, len(r.nodes)), func(n *routeNode) (driver.Record, error) {
		return n.inc.IncrementOne(ctx, t, where, inc, set)
	})
}

// IncrementValue writes on the node of the row where names: through the
// node's own IncrementValue, or its IncrementOne and the column read from
// the row.
func (r *Router) IncrementValue(ctx context.Context, t *driver.Table, where []driver.Where, inc driver.Delta, set []driver.Assignment) (int64, bool, error) {
	type answer struct {
		v  int64
		ok bool
	}
	a, err := on(ctx, r, homeOf(t, where, nil, len(r.nodes)), func(n *routeNode) (answer, error) {
		if n.value != nil {
			v, ok, err := n.value.IncrementValue(ctx, t, where, inc, set)
			return answer{v, ok}, err
		}
		rec, err := n.inc.IncrementOne(ctx, t, where, []driver.Delta{inc}, set)
		if err != nil || rec == nil {
			return answer{}, err
		}
		v, err := driver.ParseInt(rec[inc.Column])
		return answer{v, true}, err
	})
	return a.v, a.ok, err
}

// ValueIncrementSaves reports whether every node's IncrementValue saves
// round trips over its IncrementOne.
func (r *Router) ValueIncrementSaves() bool { return r.saves }

// Transaction runs fn in a transaction on the first available node.
func (r *Router) Transaction(ctx context.Context, fn func(ctx context.Context, tx driver.Adapter) error) error {
	_, err := on(ctx, r, 0, func(n *routeNode) (struct{}, error) { return struct{}{}, n.tx.Transaction(ctx, fn) })
	return err
}

// RecordsOwned reports whether every node's adapter returns records the
// caller owns (see [driver.RecordOwner]).
func (r *Router) RecordsOwned() bool {
	for i := range r.nodes {
		if o, ok := r.nodes[i].a.(driver.RecordOwner); !ok || !o.RecordsOwned() {
			return false
		}
	}
	return true
}

// CreateTables creates the tables through the first available node (the
// cluster replicates DDL to the others), when its adapter can.
func (r *Router) CreateTables(ctx context.Context, tables []*driver.Table) error {
	_, err := on(ctx, r, 0, func(n *routeNode) (struct{}, error) {
		tc, ok := n.a.(driver.TableCreator)
		if !ok {
			return struct{}{}, fmt.Errorf("%w: adapter %T cannot create tables", core.ErrUnsupported, n.a)
		}
		return struct{}{}, tc.CreateTables(ctx, tables)
	})
	return err
}

// CheckSchema checks a table through the first available node, when its
// adapter can.
func (r *Router) CheckSchema(ctx context.Context, t *driver.Table) error {
	_, err := on(ctx, r, 0, func(n *routeNode) (struct{}, error) {
		if sc, ok := n.a.(driver.SchemaChecker); ok {
			return struct{}{}, sc.CheckSchema(ctx, t)
		}
		return struct{}{}, nil
	})
	return err
}
