// Package memory is an in-memory sluice adapter: every table lives in a map
// guarded by its own mutex. It implements IncrementOne natively and
// transactions, and serves unit tests, examples and the demo.
//
// Transactions behave like a database's at READ UNCOMMITTED: each write
// applies at once and is visible to every reader, and a rollback undoes
// the transaction's own writes. Like a database, a transaction holds a
// write lock on every row it creates, changes or deletes until it ends:
// any other write to such a row waits, then evaluates its where clauses
// again, so a rollback never undoes someone else's write and a transaction
// reads back what it wrote. Two transactions that would wait for each
// other fail with a deadlock error, as on PostgreSQL or MySQL. Reads never
// wait, which keeps races observable in tests: that is enough for the
// IncrementOne fallback, whose guarded write never relies on isolation.
//
// A transaction adapter's Transaction opens a nested transaction, as a
// savepoint does: an error from its function undoes that function's writes
// only, and the row locks stay with the enclosing transaction.
package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Memory is the in-memory adapter. The zero value is not usable; call [New].
type Memory struct {
	mu     sync.Mutex // guards tables
	tables map[string]*table
	calls  atomic.Int64
	graph  sync.Mutex // guards every journal's waitingFor
}

type table struct {
	mu     sync.Mutex
	rows   map[int64]driver.Record
	nextID int64
	locks  map[int64]*journal // row id → the transaction holding its write lock
	freed  sync.Cond          // on mu: broadcast when row locks are released
}

// New returns an empty in-memory store. Tables are created on first use.
func New() *Memory { return &Memory{tables: map[string]*table{}} }

// Calls returns how many adapter calls have been made: one per round trip a
// database adapter would make (a transaction counts each call inside it).
func (m *Memory) Calls() int64 { return m.calls.Load() }

// WithoutIncrementOne returns a view of the same store that lacks the native
// IncrementOne, so that core.DB uses its transaction fallback.
func (m *Memory) WithoutIncrementOne() driver.Adapter { return withoutIncrement{m} }

type withoutIncrement struct{ m *Memory }

func (w withoutIncrement) Create(ctx context.Context, t *driver.Table, v []driver.Assignment) (driver.Record, error) {
	return w.m.Create(ctx, t, v)
}
func (w withoutIncrement) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	return w.m.FindOne(ctx, t, where)
}
func (w withoutIncrement) FindMany(ctx context.Context, t *driver.Table, where []driver.Where, o driver.FindOptions) ([]driver.Record, error) {
	return w.m.FindMany(ctx, t, where, o)
}
func (w withoutIncrement) Update(ctx context.Context, t *driver.Table, where []driver.Where, s []driver.Assignment) (driver.Record, error) {
	return w.m.Update(ctx, t, where, s)
}
func (w withoutIncrement) UpdateMany(ctx context.Context, t *driver.Table, where []driver.Where, s []driver.Assignment) (int64, error) {
	return w.m.UpdateMany(ctx, t, where, s)
}
func (w withoutIncrement) Delete(ctx context.Context, t *driver.Table, where []driver.Where) (bool, error) {
	return w.m.Delete(ctx, t, where)
}
func (w withoutIncrement) DeleteMany(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	return w.m.DeleteMany(ctx, t, where)
}
func (w withoutIncrement) Count(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	return w.m.Count(ctx, t, where)
}
func (w withoutIncrement) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return w.m.transaction(ctx, fn, false)
}
func (w withoutIncrement) CreateTables(ctx context.Context, tables []*driver.Table) error {
	return w.m.CreateTables(ctx, tables)
}

// CreateTables implements [driver.TableCreator] with nothing to do: the store
// makes a table on first use, so core.DB.CreateTables works as it does on
// a database and code written for one runs on the other unchanged.
func (m *Memory) CreateTables(context.Context, []*driver.Table) error { return nil }

func (m *Memory) table(name string) *table {
	m.mu.Lock()
	defer m.mu.Unlock()
	tb, ok := m.tables[name]
	if !ok {
		tb = &table{rows: map[int64]driver.Record{}, locks: map[int64]*journal{}}
		tb.freed.L = &tb.mu
		m.tables[name] = tb
	}
	return tb
}

// begin counts the call, honours the context and locks the table.
func (m *Memory) begin(ctx context.Context, t *driver.Table) (*table, error) {
	m.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tb := m.table(t.Name)
	tb.mu.Lock()
	return tb, nil
}

// Create inserts a row; a duplicate unique column fails with core.ErrConflict.
func (m *Memory) Create(ctx context.Context, t *driver.Table, values []driver.Assignment) (driver.Record, error) {
	tb, err := m.begin(ctx, t)
	if err != nil {
		return nil, err
	}
	defer tb.mu.Unlock()
	return m.insert(ctx, tb, t, values, nil)
}

func (m *Memory) insert(ctx context.Context, tb *table, t *driver.Table, values []driver.Assignment, undo *journal) (driver.Record, error) {
	pk := t.PrimaryKey().Name
	rec := driver.Record{}
	for _, c := range t.Columns {
		rec[c.Name] = nil
	}
	for _, a := range values {
		rec[a.Column] = a.Value
	}
	if rec[pk] == nil {
		tb.nextID++
		rec[pk] = tb.nextID
	} else if id := rec[pk].(int64); id > tb.nextID {
		tb.nextID = id
	}
	id := rec[pk].(int64)
	// An explicit id may belong to a row another transaction deleted and
	// may yet restore.
	if _, err := m.lockRows(ctx, tb, undo, func() []int64 { return []int64{id} }); err != nil {
		return nil, err
	}
	if _, taken := tb.rows[id]; taken {
		return nil, fmt.Errorf("%w: %s.%s = %d", core.ErrConflict, t.Name, pk, id)
	}
	if err := tb.checkUnique(t, rec); err != nil {
		return nil, err
	}
	tb.rows[id] = rec
	undo.add(t.Name, id, nil)
	return clone(rec), nil
}

// checkUnique refuses rec when another row holds one of its unique values.
func (tb *table) checkUnique(t *driver.Table, rec driver.Record) error {
	return tb.checkUniqueMany(t, map[int64]driver.Record{rec[t.PrimaryKey().Name].(int64): rec})
}

// checkUniqueMany refuses changed rows (id → row as it would be; ids not
// stored yet are inserts) when two rows would then share a unique value.
func (tb *table) checkUniqueMany(t *driver.Table, changed map[int64]driver.Record) error {
	for _, c := range t.Columns {
		if !c.Field.Unique {
			continue
		}
		seen := map[any]bool{}
		check := func(rec driver.Record) error {
			v := rec[c.Name]
			if v == nil {
				return nil // NULLs never collide
			}
			if tm, ok := v.(time.Time); ok {
				v = tm.UnixNano() // equal instants, whatever the location
			}
			if seen[v] {
				return fmt.Errorf("%w: %s.%s = %v", core.ErrConflict, t.Name, c.Name, rec[c.Name])
			}
			seen[v] = true
			return nil
		}
		for id, rec := range tb.rows {
			if next, ok := changed[id]; ok {
				rec = next
			}
			if err := check(rec); err != nil {
				return err
			}
		}
		for id, rec := range changed {
			if _, stored := tb.rows[id]; stored {
				continue
			}
			if err := check(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// matching returns the ids of the rows matching where, in id order.
func (tb *table) matching(where []driver.Where) []int64 {
	var ids []int64
	for id, rec := range tb.rows {
		if matches(rec, where) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// FindOne returns the matching row with the lowest id, or nil.
func (m *Memory) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	tb, err := m.begin(ctx, t)
	if err != nil {
		return nil, err
	}
	defer tb.mu.Unlock()
	if ids := tb.matching(where); len(ids) > 0 {
		return clone(tb.rows[ids[0]]), nil
	}
	return nil, nil
}

// FindMany returns the matching rows, sorted and paged by opts. NULLs sort
// first in ascending order and last in descending order.
func (m *Memory) FindMany(ctx context.Context, t *driver.Table, where []driver.Where, opts driver.FindOptions) ([]driver.Record, error) {
	tb, err := m.begin(ctx, t)
	if err != nil {
		return nil, err
	}
	defer tb.mu.Unlock()
	ids := tb.matching(where)
	out := make([]driver.Record, 0, len(ids))
	for _, id := range ids {
		out = append(out, clone(tb.rows[id]))
	}
	if opts.SortBy != "" {
		// Stable, so ties keep primary-key order.
		sort.SliceStable(out, func(i, j int) bool {
			c := sortOrder(out[i][opts.SortBy], out[j][opts.SortBy])
			if opts.Desc {
				return c > 0
			}
			return c < 0
		})
	}
	if opts.Offset > 0 {
		out = out[min(opts.Offset, len(out)):]
	}
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

// Update sets columns on the first matching row and returns it.
func (m *Memory) Update(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (driver.Record, error) {
	return m.increment(ctx, t, where, nil, set, nil)
}

// IncrementOne applies deltas and assignments to the first matching row
// while holding the table's lock, so the guard and the write are one step.
func (m *Memory) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	return m.increment(ctx, t, where, inc, set, nil)
}

func (m *Memory) increment(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment, undo *journal) (driver.Record, error) {
	tb, err := m.begin(ctx, t)
	if err != nil {
		return nil, err
	}
	defer tb.mu.Unlock()
	ids, err := m.lockRows(ctx, tb, undo, func() []int64 {
		ids := tb.matching(where)
		return ids[:min(len(ids), 1)]
	})
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return tb.write(t, ids[0], inc, set, undo)
}

// write changes one row in place, refusing a unique conflict or an
// overflow with no change made.
func (tb *table) write(t *driver.Table, id int64, inc []driver.Delta, set []driver.Assignment, undo *journal) (driver.Record, error) {
	rec, err := tb.next(t, id, inc, set)
	if err != nil {
		return nil, err
	}
	if err := tb.checkUnique(t, rec); err != nil {
		return nil, err
	}
	undo.add(t.Name, id, tb.rows[id])
	tb.rows[id] = rec
	return clone(rec), nil
}

// next returns row id as the write would leave it, without storing it.
func (tb *table) next(t *driver.Table, id int64, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	rec := clone(tb.rows[id])
	for _, d := range inc {
		if rec[d.Column] == nil {
			continue // NULL + delta stays NULL, as in SQL
		}
		cur := rec[d.Column].(int64)
		// A database refuses an out-of-range result rather than wrapping it;
		// the adapter contract makes that refusal an invalid request.
		if (d.By > 0 && cur > math.MaxInt64-d.By) || (d.By < 0 && cur < math.MinInt64-d.By) {
			return nil, fmt.Errorf("%w: %s.%s: %d + %d overflows int64", core.ErrInvalid, t.Name, d.Column, cur, d.By)
		}
		rec[d.Column] = cur + d.By
	}
	for _, a := range set {
		rec[a.Column] = a.Value
	}
	return rec, nil
}

// UpdateMany sets columns on every matching row.
func (m *Memory) UpdateMany(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (int64, error) {
	return m.updateMany(ctx, t, where, set, nil)
}

func (m *Memory) updateMany(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment, undo *journal) (int64, error) {
	tb, err := m.begin(ctx, t)
	if err != nil {
		return 0, err
	}
	defer tb.mu.Unlock()
	ids, err := m.lockRows(ctx, tb, undo, func() []int64 { return tb.matching(where) })
	if err != nil {
		return 0, err
	}
	// Check every row before changing any, so that a unique conflict leaves
	// the table as it was, like a single SQL statement.
	recs := make(map[int64]driver.Record, len(ids))
	for _, id := range ids {
		rec, err := tb.next(t, id, nil, set)
		if err != nil {
			return 0, err
		}
		recs[id] = rec
	}
	if err := tb.checkUniqueMany(t, recs); err != nil {
		return 0, err
	}
	for _, id := range ids {
		undo.add(t.Name, id, tb.rows[id])
		tb.rows[id] = recs[id]
	}
	return int64(len(ids)), nil
}

// Delete removes the first matching row.
func (m *Memory) Delete(ctx context.Context, t *driver.Table, where []driver.Where) (bool, error) {
	n, err := m.deleteRows(ctx, t, where, 1, nil)
	return n == 1, err
}

// DeleteMany removes every matching row.
func (m *Memory) DeleteMany(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	return m.deleteRows(ctx, t, where, -1, nil)
}

func (m *Memory) deleteRows(ctx context.Context, t *driver.Table, where []driver.Where, limit int, undo *journal) (int64, error) {
	tb, err := m.begin(ctx, t)
	if err != nil {
		return 0, err
	}
	defer tb.mu.Unlock()
	ids, err := m.lockRows(ctx, tb, undo, func() []int64 {
		ids := tb.matching(where)
		if limit >= 0 && len(ids) > limit {
			ids = ids[:limit]
		}
		return ids
	})
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		undo.add(t.Name, id, tb.rows[id])
		delete(tb.rows, id)
	}
	return int64(len(ids)), nil
}

// Count returns the number of matching rows.
func (m *Memory) Count(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	tb, err := m.begin(ctx, t)
	if err != nil {
		return 0, err
	}
	defer tb.mu.Unlock()
	return int64(len(tb.matching(where))), nil
}

// Transaction runs fn with an adapter whose writes are undone if fn fails.
func (m *Memory) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return m.transaction(ctx, fn, true)
}

func (m *Memory) transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error, native bool) error {
	tx := &txAdapter{m: m, undo: &journal{}}
	var a driver.Adapter = tx
	if native {
		a = txIncrementer{tx}
	}
	committed := false
	// Deferred so that a panicking fn still rolls back and frees its rows.
	defer func() { tx.undo.finish(m, !committed) }()
	if err := fn(ctx, a); err != nil {
		return err
	}
	committed = true
	return nil
}

// errDeadlock is returned to a transaction whose write would wait, directly
// or through others, for a row lock that it holds itself.
var errDeadlock = errors.New("memory: deadlock: transactions wait for each other's rows")

// errEnded is returned by a transaction adapter used after its transaction.
var errEnded = errors.New("memory: the transaction has ended")

// lockRows returns the rows a write targets, once no other transaction
// holds a write lock on any of them, and locks them for undo's transaction
// (a write outside a transaction, undo == nil, takes no lock). It is called
// with tb.mu held and releases it while it waits; target is evaluated again
// after each wait, as a database evaluates a guard again once the row lock
// it waited for is released.
func (m *Memory) lockRows(ctx context.Context, tb *table, undo *journal, target func() []int64) ([]int64, error) {
	if undo.ended() {
		return nil, errEnded
	}
	for {
		ids := target()
		var owner *journal
		for _, id := range ids {
			if o := tb.locks[id]; o != nil && o != undo {
				owner = o
				break
			}
		}
		if owner == nil {
			for _, id := range ids {
				if undo != nil && tb.locks[id] == nil {
					tb.locks[id] = undo
					undo.hold(tb, id)
				}
			}
			return ids, nil
		}
		if err := m.wait(ctx, tb, undo, owner); err != nil {
			return nil, err
		}
	}
}

// wait blocks, with tb.mu held, until some row lock of tb is released or
// ctx ends. self (nil outside a transaction) is about to wait for owner.
func (m *Memory) wait(ctx context.Context, tb *table, self, owner *journal) error {
	if self != nil {
		m.graph.Lock()
		for o := owner; o != nil; o = o.waitingFor {
			if o == self {
				m.graph.Unlock()
				return errDeadlock
			}
		}
		self.waitingFor = owner
		m.graph.Unlock()
		defer func() {
			m.graph.Lock()
			self.waitingFor = nil
			m.graph.Unlock()
		}()
	}
	stop := context.AfterFunc(ctx, func() {
		tb.mu.Lock()
		tb.freed.Broadcast()
		tb.mu.Unlock()
	})
	tb.freed.Wait()
	stop()
	return ctx.Err()
}

func clone(r driver.Record) driver.Record {
	out := make(driver.Record, len(r))
	for k, v := range r {
		out[k] = v
	}
	return out
}

func equal(a, b any) bool {
	c, ok := compare(a, b)
	return ok && c == 0
}

// compare orders two normalised values of one type; ok is false for NULL
// or mismatched types, which like SQL satisfy no comparison.
func compare(a, b any) (int, bool) {
	switch x := a.(type) {
	case int64:
		return ordered(x, b)
	case string:
		return ordered(x, b)
	case bool:
		y, ok := b.(bool)
		if !ok {
			return 0, false
		}
		if x == y {
			return 0, true
		}
		if !x {
			return -1, true
		}
		return 1, true
	case time.Time:
		y, ok := b.(time.Time)
		if !ok {
			return 0, false
		}
		return x.Compare(y), true
	}
	return 0, false
}

// ordered compares x with b when b is of x's type.
func ordered[T cmp.Ordered](x T, b any) (int, bool) {
	y, ok := b.(T)
	if !ok {
		return 0, false
	}
	return cmp.Compare(x, y), true
}

// sortOrder orders values for FindMany: NULL comes before every value, as
// in MySQL and SQLite (PostgreSQL puts it last), so that the order is total.
func sortOrder(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	c, _ := compare(a, b)
	return c
}

func matches(rec driver.Record, where []driver.Where) bool {
	for _, w := range where {
		if !match(rec[w.Column], w) {
			return false
		}
	}
	return true
}

func match(v any, w driver.Where) bool {
	if w.Value == nil {
		switch w.Op {
		case driver.OpEq:
			return v == nil
		case driver.OpNe:
			return v != nil
		}
		return false
	}
	if v == nil {
		return false
	}
	switch w.Op {
	case driver.OpIn, driver.OpNotIn:
		found := false
		for _, x := range w.Value.([]any) {
			if equal(v, x) {
				found = true
				break
			}
		}
		return found == (w.Op == driver.OpIn)
	}
	c, ok := compare(v, w.Value)
	if !ok {
		return false
	}
	switch w.Op {
	case driver.OpEq:
		return c == 0
	case driver.OpNe:
		return c != 0
	case driver.OpLt:
		return c < 0
	case driver.OpLte:
		return c <= 0
	case driver.OpGt:
		return c > 0
	case driver.OpGte:
		return c >= 0
	}
	return false
}
