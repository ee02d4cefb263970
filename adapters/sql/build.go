package sluicesql

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// builder writes one statement and its arguments. In argsOnly mode it lays
// out the arguments alone: a cached statement's text is reused, and running
// the same rendering code for its arguments keeps their order right by
// construction.
type builder struct {
	sb       strings.Builder
	args     []any
	n        int     // placeholders written so far
	t        *traits // the dialect's (engine.t)
	dollar   bool    // $1, $2, … rather than ?
	argsOnly bool
	causal   bool // reads wait for the node to apply the cluster's commits (Features.CausalReads)
}

// read writes the start of a read whose empty or old answer would be
// taken for the truth (no such key, no such row, nothing matched): on a
// cluster with Features.CausalReads, prefixed so that the node first
// applies every commit the cluster certified before it.
func (b *builder) read(s string) {
	if b.causal {
		b.write(causalReadPrefix)
	}
	b.write(s)
}

func (b *builder) write(s string) {
	if !b.argsOnly {
		b.sb.WriteString(s)
	}
}

func (b *builder) ident(name string) {
	if !b.argsOnly {
		b.sb.WriteString(b.t.quoted(name))
	}
}

// arg writes a placeholder and appends the value, bound for the dialect.
func (b *builder) arg(v any) {
	b.args = append(b.args, bindValue(b.t, v))
	b.n++
	if b.argsOnly {
		return
	}
	if b.dollar {
		b.sb.WriteByte('$')
		b.sb.WriteString(strconv.Itoa(b.n))
	} else {
		b.sb.WriteByte('?')
	}
}

// columns writes the table's columns, comma-separated.
func (b *builder) columns(t *driver.Table) { b.qualifiedColumns("", t) }

// qualifiedColumns writes t's columns, each after "alias." when alias is
// not empty.
func (b *builder) qualifiedColumns(alias string, t *driver.Table) {
	for i, c := range t.Columns {
		if i > 0 {
			b.write(", ")
		}
		if alias != "" {
			b.write(alias + ".")
		}
		b.ident(c.Name)
	}
}

// firstByKey writes " WHERE … ORDER BY pk LIMIT 1": the first match in
// primary-key order, as a read of one row and MySQL's single-row UPDATE
// and DELETE choose it.
func (b *builder) firstByKey(t *driver.Table, where []driver.Where) {
	b.where(where)
	b.write(" ORDER BY ")
	b.ident(t.PrimaryKey().Name)
	b.write(" LIMIT 1")
}

// updateFirst writes MySQL's UPDATE of the first match in primary-key
// order (an UPDATE re-reads the row it locks and re-evaluates where on
// it, so the guard holds during the write); set writes the assignments.
func (b *builder) updateFirst(t *driver.Table, where []driver.Where, set func()) {
	b.write("UPDATE ")
	b.ident(t.Name)
	b.write(" SET ")
	set()
	b.firstByKey(t, where)
}

// selectFirst writes "SELECT <columns> FROM t WHERE … ORDER BY pk LIMIT
// 1", locking the row it reads when forUpdate.
func (b *builder) selectFirst(t *driver.Table, where []driver.Where, forUpdate bool) {
	b.read("SELECT ")
	b.columns(t)
	b.write(" FROM ")
	b.ident(t.Name)
	b.firstByKey(t, where)
	if forUpdate {
		b.write(" FOR UPDATE")
	}
}

// where writes " WHERE c1 AND c2 …", or nothing for no clauses.
func (b *builder) where(ws []driver.Where) {
	for i, w := range ws {
		if i == 0 {
			b.write(" WHERE ")
		} else {
			b.write(" AND ")
		}
		b.cond(w)
	}
}

// whereInTx is where for a write inside one of the engine's transactions:
// on a Galera node (b.causal) it also requires the transaction to be open
// (@@in_transaction = 1), so that a write the node would run on its own,
// after aborting the transaction for another node's write set, matches
// nothing instead of applying outside it; the check before COMMIT
// (stillInTransaction) then reports the conflict.
func (b *builder) whereInTx(ws []driver.Where) {
	b.where(ws)
	if !b.causal {
		return
	}
	if len(ws) == 0 {
		b.write(" WHERE ")
	} else {
		b.write(" AND ")
	}
	b.write("@@in_transaction = 1")
}

// conds writes the clauses joined by AND, without the WHERE keyword.
func (b *builder) conds(ws []driver.Where) {
	for i, w := range ws {
		if i > 0 {
			b.write(" AND ")
		}
		b.cond(w)
	}
}

var opSQL = [...]string{driver.OpEq: " = ", driver.OpNe: " <> ", driver.OpLt: " < ", driver.OpLte: " <= ", driver.OpGt: " > ", driver.OpGte: " >= "}

// cond writes one clause. core.DB has validated it: IN lists are non-empty
// []any without nils; nil appears only with OpEq and OpNe.
func (b *builder) cond(w driver.Where) {
	b.ident(w.Column)
	switch {
	case w.Value == nil && w.Op == driver.OpEq:
		b.write(" IS NULL")
	case w.Value == nil && w.Op == driver.OpNe:
		b.write(" IS NOT NULL")
	case w.Op == driver.OpIn || w.Op == driver.OpNotIn:
		if w.Op == driver.OpIn {
			b.write(" IN (")
		} else {
			b.write(" NOT IN (")
		}
		list, _ := w.Value.([]any)
		for i, v := range list {
			if i > 0 {
				b.write(", ")
			}
			b.arg(v)
		}
		b.write(")")
	default:
		b.write(opSQL[w.Op])
		b.arg(w.Value)
	}
}

// assignments writes "SET c = c + ?, d = ?, …".
//
// SQLite turns an integer that overflows into a REAL and stores it; the
// delta is guarded there with a CASE whose overflow branch calls
// abs(-9223372036854775808), which SQLite answers with an "integer
// overflow" error, so the statement fails and nothing is written.
// PostgreSQL and MySQL fail an overflowing addition themselves.
func (b *builder) assignments(inc []driver.Delta, set []driver.Assignment) {
	b.write(" SET ")
	first := true
	sep := func() {
		if !first {
			b.write(", ")
		}
		first = false
	}
	for _, d := range inc {
		sep()
		b.ident(d.Column)
		b.write(" = ")
		if b.t.overflowToReal && d.By != 0 {
			b.write("CASE WHEN ")
			b.ident(d.Column)
			if d.By > 0 {
				b.write(" > ")
				b.arg(int64(maxInt64 - d.By))
			} else {
				b.write(" < ")
				b.arg(int64(minInt64 - d.By))
			}
			b.write(" THEN abs(")
			b.arg(int64(minInt64))
			b.write(") ELSE ")
			b.ident(d.Column)
			b.write(" + ")
			b.arg(d.By)
			b.write(" END")
			continue
		}
		b.ident(d.Column)
		b.write(" + ")
		b.arg(d.By)
	}
	for _, s := range set {
		sep()
		b.assign(s)
	}
}

// assign writes one absolute set of an UPDATE: column = value, or
// column = NULL.
func (b *builder) assign(s driver.Assignment) {
	b.ident(s.Column)
	if s.Value == nil {
		b.write(" = NULL")
		return
	}
	b.write(" = ")
	b.arg(s.Value)
}

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

// appendShape appends the cache key of a statement's text to buf:
// everything that changes the text (table, kind, where fields, operators,
// NULL-ness, list lengths, delta signs, assigned columns and their
// NULL-ness), and nothing that changes only the arguments. It is built
// into a caller's buffer so that a cache hit allocates nothing.
func appendShape(buf []byte, t *driver.Table, kind byte, where []driver.Where, inc []driver.Delta, set []driver.Assignment) []byte {
	buf = append(buf, kind)
	buf = append(buf, t.Name...)
	for _, c := range t.Columns { // a table of another schema may share the name
		buf = append(buf, 0)
		buf = append(buf, c.Name...)
	}
	buf = append(buf, 2)
	for _, w := range where {
		buf = append(buf, w.Column...)
		buf = append(buf, 0, byte(w.Op))
		switch {
		case w.Value == nil:
			buf = append(buf, 'n')
		case w.Op == driver.OpIn || w.Op == driver.OpNotIn:
			list, _ := w.Value.([]any)
			buf = strconv.AppendInt(buf, int64(len(list)), 10)
		}
		buf = append(buf, 1)
	}
	buf = append(buf, 2)
	for _, d := range inc {
		buf = append(buf, d.Column...)
		switch {
		case d.By > 0:
			buf = append(buf, '+')
		case d.By < 0:
			buf = append(buf, '-')
		}
		buf = append(buf, 1)
	}
	buf = append(buf, 2)
	for _, a := range set {
		buf = append(buf, a.Column...)
		if a.Value == nil {
			buf = append(buf, 'n')
		}
		buf = append(buf, 1)
	}
	return buf
}

// mysqlTimeLayout is how times are sent to MySQL: UTC wall-clock text, so
// that the driver's loc setting cannot shift what is stored.
const mysqlTimeLayout = "2006-01-02 15:04:05.000"

// bindValue turns a value core.DB normalised (int64, string, bool, UTC
// time.Time, nil) into what the dialect stores. Times are the one case that
// differs (traits.timeLayout).
func bindValue(d *traits, v any) any {
	t, ok := v.(time.Time)
	if !ok {
		return v
	}
	if d.timeLayout == "" {
		if t.Location() == time.UTC {
			return v // as core.DB normalised it: no new boxing
		}
		return t.UTC()
	}
	return t.UTC().Format(d.timeLayout)
}

// dollarCache maps statements written with ? placeholders to PostgreSQL's
// $1, $2, …. The engine caches its statements by shape, so the set is
// small; the cap only guards against a caller who sends endless distinct
// text through an executor.
var (
	dollarCache sync.Map
	dollarCount atomic.Int64
)

const dollarCacheMax = 4096

// Dollars rewrites each ? outside quoted identifiers and string literals
// as $n, numbered from 1: the engine's statements in the [Question] style
// turned into PostgreSQL's own, for an executor that runs them past an ORM
// which would otherwise rewrite them (see the gorm and bun adapters). The
// results are cached, so a statement the engine repeats is rewritten once.
func Dollars(query string) string {
	if v, ok := dollarCache.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0 // a doubled quote closes and reopens: same result
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	out := b.String()
	if dollarCount.Add(1) <= dollarCacheMax {
		dollarCache.Store(query, out)
	}
	return out
}

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

// kindUpdateSome is IncrementReturning's UPDATE … RETURNING some columns
// (named at the end of its shape): past kindUpdateGuardedLastID + 0 … 8,
// which the optimistic UPDATE takes.
const kindUpdateSome = kindUpdateGuardedLastID + 9

// maxCachedStatements bounds the statement cache: shapes are few in
// practice, but IN lists of every length would each make one.
const maxCachedStatements = 4096

// stmt renders a statement through render, reusing the cached text of its
// shape when there is one: only the arguments are laid out again. extra
// ends the shape, for what kind, where, inc and set do not tell.
func (a *Adapter) stmt(t *driver.Table, kind byte, where []driver.Where, inc []driver.Delta, set []driver.Assignment, render func(b *builder), extra ...string) (string, []any) {
	var buf [1024]byte // the apikey table's shape, with its columns, passes 512 bytes
	key := appendShape(buf[:0], t, kind, where, inc, set)
	for _, x := range extra {
		key = append(append(key, x...), 3)
	}
	b := builders.Get().(*builder)
	*b = builder{t: a.e.t, dollar: a.e.dollar, causal: a.e.features.CausalReads,
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
