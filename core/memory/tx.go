package memory

import (
	"context"
	"sync"

	"github.com/sluice-go/sluice/core/driver"
)

// journal is a transaction's state: what it changed, so a rollback can
// undo it, and the row locks it holds. A nil *journal stands for a write
// outside any transaction.
type journal struct {
	mu         sync.Mutex
	entries    []undoEntry
	held       []heldLock
	done       bool
	waitingFor *journal // guarded by Memory.graph: the transaction this one waits for
}

type heldLock struct {
	tb *table
	id int64
}

type undoEntry struct {
	table string
	id    int64
	old   driver.Record // nil: the row did not exist
}

func (j *journal) add(table string, id int64, old driver.Record) {
	if j == nil {
		return
	}
	j.mu.Lock()
	j.entries = append(j.entries, undoEntry{table, id, old})
	j.mu.Unlock()
}

// hold records a row lock; the caller holds tb.mu and has set tb.locks[id].
func (j *journal) hold(tb *table, id int64) {
	j.mu.Lock()
	j.held = append(j.held, heldLock{tb, id})
	j.mu.Unlock()
}

func (j *journal) ended() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.done
}

// finish ends the transaction: a rollback first restores the rows it
// changed, while it still holds their locks; then every lock is released
// and the writers waiting for them wake.
func (j *journal) finish(m *Memory, rollback bool) {
	if rollback {
		j.rollback(m)
	}
	j.mu.Lock()
	j.done = true
	held := j.held
	j.held = nil
	j.mu.Unlock()
	for _, h := range held {
		h.tb.mu.Lock()
		if h.tb.locks[h.id] == j {
			delete(h.tb.locks, h.id)
		}
		h.tb.freed.Broadcast()
		h.tb.mu.Unlock()
	}
}

// rollback restores every row the transaction changed.
func (j *journal) rollback(m *Memory) { j.rollbackTo(m, 0) }

// mark returns a savepoint: how many changes the transaction has made.
func (j *journal) mark() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.entries)
}

// rollbackTo restores the rows changed since the savepoint mark, in reverse
// order of change. The row locks stay held: they belong to the enclosing
// transaction, which may yet change those rows again.
// j.mu is not held while a table is locked: writes take them the other way round.
func (j *journal) rollbackTo(m *Memory, mark int) {
	j.mu.Lock()
	entries := j.entries[mark:]
	j.entries = j.entries[:mark:mark]
	j.mu.Unlock()
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		tb := m.table(e.table)
		tb.mu.Lock()
		if e.old == nil {
			delete(tb.rows, e.id)
		} else {
			tb.rows[e.id] = e.old
		}
		tb.mu.Unlock()
	}
}

// txAdapter is the adapter handed to a transaction's function.
type txAdapter struct {
	m    *Memory
	undo *journal
}

func (tx *txAdapter) Create(ctx context.Context, t *driver.Table, values []driver.Assignment) (driver.Record, error) {
	tb, err := tx.m.begin(ctx, t)
	if err != nil {
		return nil, err
	}
	defer tb.mu.Unlock()
	return tx.m.insert(ctx, tb, t, values, tx.undo)
}

func (tx *txAdapter) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	return tx.m.FindOne(ctx, t, where)
}

func (tx *txAdapter) FindMany(ctx context.Context, t *driver.Table, where []driver.Where, o driver.FindOptions) ([]driver.Record, error) {
	return tx.m.FindMany(ctx, t, where, o)
}

func (tx *txAdapter) Update(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (driver.Record, error) {
	return tx.m.increment(ctx, t, where, nil, set, tx.undo)
}

func (tx *txAdapter) UpdateMany(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (int64, error) {
	return tx.m.updateMany(ctx, t, where, set, tx.undo)
}

func (tx *txAdapter) Delete(ctx context.Context, t *driver.Table, where []driver.Where) (bool, error) {
	n, err := tx.m.deleteRows(ctx, t, where, 1, tx.undo)
	return n == 1, err
}

func (tx *txAdapter) DeleteMany(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	return tx.m.deleteRows(ctx, t, where, -1, tx.undo)
}

func (tx *txAdapter) Count(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	return tx.m.Count(ctx, t, where)
}

// CreateTables has nothing to create, as [Memory.CreateTables].
func (tx *txAdapter) CreateTables(context.Context, []*driver.Table) error { return nil }

// Transaction runs fn in a nested transaction on the same journal: an error
// from fn undoes fn's writes and leaves the enclosing transaction usable.
func (tx *txAdapter) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return tx.savepoint(ctx, func(ctx context.Context) error { return fn(ctx, tx) })
}

// savepoint runs body and undoes its writes unless it returns nil. Deferred,
// so that a panicking body is undone too before the panic reaches the
// enclosing transaction.
func (tx *txAdapter) savepoint(ctx context.Context, body func(context.Context) error) error {
	if tx.undo.ended() {
		return errEnded
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	mark := tx.undo.mark()
	released := false
	defer func() {
		if !released {
			tx.undo.rollbackTo(tx.m, mark)
		}
	}()
	if err := body(ctx); err != nil {
		return err
	}
	released = true
	return nil
}

// txIncrementer is a transaction adapter with the native IncrementOne.
type txIncrementer struct{ *txAdapter }

func (tx txIncrementer) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	return tx.m.increment(ctx, t, where, inc, set, tx.undo)
}

// Transaction runs fn in a nested transaction, handing it the adapter
// with the native IncrementOne.
func (tx txIncrementer) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return tx.savepoint(ctx, func(ctx context.Context) error { return fn(ctx, tx) })
}

var (
	_ driver.Transactor   = (*txAdapter)(nil)
	_ driver.Transactor   = txIncrementer{}
	_ driver.Incrementer  = (*Memory)(nil)
	_ driver.Transactor   = (*Memory)(nil)
	_ driver.Transactor   = withoutIncrement{}
	_ driver.Incrementer  = txIncrementer{}
	_ driver.TableCreator = (*Memory)(nil)
	_ driver.TableCreator = withoutIncrement{}
	_ driver.TableCreator = (*txAdapter)(nil)
	_ driver.TableCreator = txIncrementer{}
)
