package sluicesql

import (
	"strings"
	"sync"

	"github.com/sluice-go/sluice/core/driver"
)

// The statement kinds, the first byte of a statement's shape in the
// cache: one per statement the engine renders through stmt.
const (
	kindCreate               byte = iota + 1 // Create's INSERT
	kindFindOne                              // FindOne, and the optimistic read of IncrementOne on MySQL
	kindUpdateOne                            // IncrementOne's UPDATE … RETURNING
	kindLockFirst                            // IncrementOne's SELECT … FOR UPDATE on MySQL
	kindUpdateByPK                           // IncrementOne's UPDATE of the locked row on MySQL
	kindFindByPK                             // the read-back of Create on MySQL
	kindUpdateValue                          // IncrementValue's LAST_INSERT_ID UPDATE on MySQL
	kindUpdateGuarded                        // the optimistic guarded UPDATE of IncrementOne on MySQL
	kindUpdateReturningValue                 // IncrementValue's UPDATE … RETURNING one column
	kindUpdatePair                           // IncrementPair's packed LAST_INSERT_ID UPDATE on MySQL
	kindUpdateReturningPair                  // IncrementPair's UPDATE … RETURNING two columns
	kindUpdateGuardedLastID                  // the optimistic UPDATE answering a delta by LAST_INSERT_ID, on MySQL (+ the delta's index, up to 8)
)

// maxCachedStatements bounds the statement cache: shapes are few in
// practice, but IN lists of every length would each make one.
const maxCachedStatements = 4096

// stmt renders a statement through render, reusing the cached text of its
// shape when there is one: only the arguments are laid out again.
func (a *Adapter) stmt(t *driver.Table, kind byte, where []driver.Where, inc []driver.Delta, set []driver.Assignment, render func(b *builder)) (string, []any) {
	var buf [512]byte
	key := appendShape(buf[:0], t, kind, where, inc, set)
	b := builders.Get().(*builder)
	*b = builder{d: a.e.features.Dialect, dollar: a.e.dollar, causal: a.e.features.CausalReads,
		args: make([]any, 0, 2*len(where)+3*len(inc)+len(set))}
	defer builders.Put(b) // the text and the arguments are the caller's; the builder holds neither after
	if m := a.e.stmts.Load(); m != nil {
		if q, ok := (*m)[string(key)]; ok { // no allocation: the compiler looks up without copying key
			b.argsOnly = true
			render(b)
			args := b.args
			b.args = nil
			return q, args
		}
	}
	render(b)
	q, args := b.sb.String(), b.args
	b.sb, b.args = strings.Builder{}, nil
	a.e.remember(string(key), q)
	return q, args
}

var builders = sync.Pool{New: func() any { return new(builder) }}

// remember caches a statement's text. The cache is a map replaced whole
// on each addition (copy on write): additions are few and bounded, and
// lookups on the hot path take no lock.
func (e *engine) remember(key, q string) {
	e.stmtsMu.Lock()
	defer e.stmtsMu.Unlock()
	old := e.stmts.Load()
	if old != nil {
		if _, ok := (*old)[key]; ok || len(*old) >= maxCachedStatements {
			return
		}
	}
	next := make(map[string]string, 1+len(ptrMap(old)))
	for k, v := range ptrMap(old) {
		next[k] = v
	}
	next[key] = q
	e.stmts.Store(&next)
}

func ptrMap(m *map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return *m
}
