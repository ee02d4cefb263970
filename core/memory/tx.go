package memory

import (
	"context"
	"sync"

	"github.com/sluice-go/sluice/core"
)

// journal records what a transaction changed, so a rollback can undo it.
type journal struct {
	mu      sync.Mutex
	entries []undoEntry
}

type undoEntry struct {
	table string
	id    int64
	old   core.Record // nil: the row did not exist
}

func (j *journal) add(table string, id int64, old core.Record) {
	if j == nil {
		return
	}
	j.mu.Lock()
	j.entries = append(j.entries, undoEntry{table, id, old})
	j.mu.Unlock()
}

// rollback restores the rows in reverse order of change.
func (j *journal) rollback(m *Memory) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := len(j.entries) - 1; i >= 0; i-- {
		e := j.entries[i]
		tb := m.table(e.table)
		tb.mu.Lock()
		if e.old == nil {
			delete(tb.rows, e.id)
		} else {
			tb.rows[e.id] = e.old
		}
		tb.mu.Unlock()
	}
	j.entries = nil
}

// txAdapter is the adapter handed to a transaction's function.
type txAdapter struct {
	m    *Memory
	undo *journal
}

func (tx *txAdapter) Create(ctx context.Context, t *core.Table, values []core.Assignment) (core.Record, error) {
	tb, err := tx.m.begin(ctx, t)
	if err != nil {
		return nil, err
	}
	defer tb.mu.Unlock()
	return tb.insert(t, values, tx.undo)
}

func (tx *txAdapter) FindOne(ctx context.Context, t *core.Table, where []core.Where) (core.Record, error) {
	return tx.m.FindOne(ctx, t, where)
}

func (tx *txAdapter) FindMany(ctx context.Context, t *core.Table, where []core.Where, o core.FindOptions) ([]core.Record, error) {
	return tx.m.FindMany(ctx, t, where, o)
}

func (tx *txAdapter) Update(ctx context.Context, t *core.Table, where []core.Where, set []core.Assignment) (core.Record, error) {
	return tx.m.increment(ctx, t, where, nil, set, tx.undo)
}

func (tx *txAdapter) UpdateMany(ctx context.Context, t *core.Table, where []core.Where, set []core.Assignment) (int64, error) {
	return tx.m.updateMany(ctx, t, where, set, tx.undo)
}

func (tx *txAdapter) Delete(ctx context.Context, t *core.Table, where []core.Where) (bool, error) {
	n, err := tx.m.deleteRows(ctx, t, where, 1, tx.undo)
	return n == 1, err
}

func (tx *txAdapter) DeleteMany(ctx context.Context, t *core.Table, where []core.Where) (int64, error) {
	return tx.m.deleteRows(ctx, t, where, -1, tx.undo)
}

func (tx *txAdapter) Count(ctx context.Context, t *core.Table, where []core.Where) (int64, error) {
	return tx.m.Count(ctx, t, where)
}

// txIncrementer is a transaction adapter with the native IncrementOne.
type txIncrementer struct{ *txAdapter }

func (tx txIncrementer) IncrementOne(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	return tx.m.increment(ctx, t, where, inc, set, tx.undo)
}

var (
	_ core.Incrementer = (*Memory)(nil)
	_ core.Transactor  = (*Memory)(nil)
	_ core.Transactor  = withoutIncrement{}
	_ core.Incrementer = txIncrementer{}
)
