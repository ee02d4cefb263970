package sluicesql

import (
	"context"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// steer is how a test steers incrementOptimistic, through the engine of
// an adapter it made; the zero value, every adapter's outside tests,
// steers nothing.
type steer struct {
	// afterRead runs between the optimistic read and the guarded write: a
	// test injects a concurrent change there.
	afterRead func(ctx context.Context)
	// noGuards drops the columns from the guard, which then holds the
	// primary key and where alone, and the answer of LAST_INSERT_ID, so
	// that the row returned is the row read with the write applied in Go:
	// the read-then-write increment that the race test must catch.
	noGuards bool
}

// guardSeparator ends the caller's clauses and starts the guard in the
// shape of a guarded write: its field is no identifier, so no clause of
// the caller's can stand for it.
var guardSeparator = driver.Where{Column: "\x00guard", Op: driver.OpEq, Value: true}

// guard is one column of a guarded write: equal to the value read.
type guard struct {
	col   string
	value any  // nil: IS NULL
	bytes bool // compare CAST(col AS BINARY) with value, a []byte
}

// incrementOptimistic is IncrementOne on MySQL outside a transaction in
// two autocommit statements, when no other writer touches the row between
// them:
//
//	SELECT <columns> FROM t WHERE <where> ORDER BY pk LIMIT 1
//	UPDATE t SET <deltas, assignments>
//	WHERE pk = <id> AND <where> AND <every other column equal to the value read>
//
// No row read is no match, at the moment of the read. Otherwise the row
// after the write is computed from the row read (applyWrite, which refuses
// an overflow before anything is written), and one row affected proves it
// right: the guard held on the row the UPDATE locked, so that row was the
// row read, and the write made it the computed one. The guard compares
// every column NULL-safely and exactly: integers as integers, times to the
// microsecond, and strings and any other text as bytes (CAST(col AS
// BINARY)), so that neither a case-insensitive collation nor trailing
// spaces hide a change. Zero rows affected, which is also what an UPDATE
// that changes nothing reports when the DSN does not set clientFoundRows,
// is a miss: done is false, nothing was written, and the caller takes the
// locking path. So is a row with a value the guard cannot compare exactly
// (a float), before anything is written.
func (a *Adapter) incrementOptimistic(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (rec driver.Record, done bool, err error) {
	pk := t.PrimaryKey().Name
	q, args := a.stmt(t, kindFindOne, where, nil, nil, func(b *builder) { b.selectFirst(t, where, false) })
	q, args, err = a.inlined(q, args)
	if err != nil {
		return nil, true, err
	}
	row, err := retried(a, ctx, func() (driver.Record, error) { return a.queryOne(ctx, q, args) })
	if err != nil || row == nil {
		return nil, true, err
	}
	id, err := driver.ParseInt(row[pk])
	if err != nil {
		return nil, false, nil // the locking path reports it
	}
	// answered: the delta whose value after the write the OK packet
	// reports (LAST_INSERT_ID), so that neither it nor the columns set
	// need a guard; -1 when the executor reports no insert id.
	answered := -1
	if a.e.mysql.Load()&mysqlLastID != 0 && !a.e.steer.noGuards {
		answered = answeredDelta(row, inc)
	}
	var gbuf [16]guard
	guards, ok := guardsOf(t, row, pk, unguarded(inc, set, answered), gbuf[:0])
	if !ok {
		return nil, false, nil
	}
	if a.e.steer.noGuards {
		guards = guards[:0]
	}
	if err := applyWrite(row, inc, set); err != nil {
		return nil, true, err
	}
	if hook := a.e.steer.afterRead; hook != nil {
		hook(ctx)
	}
	n, value, err := a.guardedUpdate(ctx, t, id, where, guards, inc, set, answered)
	switch {
	case err != nil:
		return nil, true, err
	case n != 1:
		return nil, false, nil
	}
	if answered >= 0 {
		row[inc[answered].Column] = value
	}
	return row, true, nil
}

// answeredDelta picks the delta whose value the guarded write answers
// through LAST_INSERT_ID: the first that changes a column read non-NULL
// (NULL plus a delta stays NULL, which the function cannot tell from 0);
// -1 when there is none.
func answeredDelta(row driver.Record, inc []driver.Delta) int {
	for i, d := range inc {
		if d.By != 0 && row[d.Column] != nil {
			return i
		}
	}
	return -1
}

// unguarded reports the columns the guarded write need not compare with
// the values read, because the row it returns holds what the write made
// of them whatever a concurrent writer did before it: the columns set,
// and the answered delta's. The guard then conflicts only with a change
// to a column the returned row takes as read (another delta's, or one the
// write does not touch), or with the caller's where.
func unguarded(inc []driver.Delta, set []driver.Assignment, answered int) func(col string) bool {
	return func(col string) bool {
		if answered >= 0 && inc[answered].Column == col {
			return true
		}
		for _, s := range set {
			if s.Column == col {
				return true
			}
		}
		return false
	}
}

// guardedUpdate runs the optimistic write of incrementOptimistic and
// returns the rows it affected, and, when answered is a delta's index, the
// value that delta's column holds after the write (LAST_INSERT_ID).
func (a *Adapter) guardedUpdate(ctx context.Context, t *driver.Table, id int64, where []driver.Where, guards []guard, inc []driver.Delta, set []driver.Assignment, answered int) (int64, int64, error) {
	pk := t.PrimaryKey().Name
	var sbuf [24]driver.Where
	shape := append(sbuf[:0], driver.Where{Column: pk, Op: driver.OpEq, Value: id})
	shape = append(shape, where...)
	shape = append(shape, guardSeparator)
	for _, g := range guards {
		op := driver.OpEq
		if g.bytes {
			op = driver.OpNe // only a marker of the form in the cache key
		}
		shape = append(shape, driver.Where{Column: g.col, Op: op, Value: g.value})
	}
	kind := kindUpdateGuarded
	if answered >= 0 {
		kind = kindUpdateGuardedLastID + byte(min(answered, 8)) // the answered delta is part of the shape
	}
	uq, uargs := a.stmt(t, kind, shape, inc, set, func(b *builder) {
		b.write("UPDATE ")
		b.ident(t.Name)
		b.assignmentsLastID(inc, set, answered)
		b.write(" WHERE ")
		b.ident(pk)
		b.write(" = ")
		b.arg(id)
		for _, w := range where {
			b.write(" AND ")
			b.cond(w)
		}
		for _, g := range guards {
			b.write(" AND ")
			b.guard(g)
		}
	})
	uq, uargs, err := a.inlined(uq, uargs)
	if err != nil {
		return 0, 0, err
	}
	if answered >= 0 {
		// runLastID, not execLastID: the row was read causally, so a miss
		// is a change since the read, which no catching up undoes.
		value, ok, err := a.runLastID(ctx, uq, uargs)
		if ok {
			return 1, value, err
		}
		return 0, 0, err
	}
	n, err := retried(a, ctx, func() (int64, error) { return a.exec(ctx, uq, uargs) })
	return n, 0, err
}

// assignmentsLastID is assignments with the delta at index answered
// written as c = CAST(LAST_INSERT_ID(c + ?) AS SIGNED), so that the OK
// packet carries its value after the write (see IncrementValue).
func (b *builder) assignmentsLastID(inc []driver.Delta, set []driver.Assignment, answered int) {
	if answered < 0 {
		b.assignments(inc, set)
		return
	}
	d := inc[answered]
	b.write(" SET ")
	b.ident(d.Column)
	b.write(" = CAST(LAST_INSERT_ID(")
	b.ident(d.Column)
	b.write(" + ")
	b.arg(d.By)
	b.write(") AS SIGNED)")
	for i, o := range inc {
		if i != answered {
			b.write(", ")
			b.ident(o.Column)
			b.write(" = ")
			b.ident(o.Column)
			b.write(" + ")
			b.arg(o.By)
		}
	}
	for _, s := range set {
		b.write(", ")
		b.assign(s)
	}
}

// guard writes one column's guard: NULL-safe, and byte-exact for text.
func (b *builder) guard(g guard) {
	switch {
	case g.value == nil:
		b.ident(g.col)
		b.write(" IS NULL")
	case g.bytes:
		b.write("CAST(")
		b.ident(g.col)
		b.write(" AS BINARY) = ")
		b.arg(g.value)
	default:
		b.ident(g.col)
		b.write(" = ")
		b.arg(g.value)
	}
}

// mysqlGuardTime is how a time read is compared: its wall clock as read,
// to the microsecond (MySQL's finest), which the server converts to the
// column's type.
const mysqlGuardTime = "2006-01-02 15:04:05.000000"

// guardsOf appends to buf a guard for each column of row but the primary
// key and those skip reports. ok is false when a value has no exact
// comparison here.
func guardsOf(t *driver.Table, row driver.Record, pk string, skip func(col string) bool, buf []guard) ([]guard, bool) {
	for _, c := range t.Columns {
		if c.Name == pk || skip(c.Name) {
			continue
		}
		g := guard{col: c.Name}
		// read is the value as the record holds it: a guard that keeps
		// it whole reuses its interface rather than boxing it again.
		read := row[c.Name]
		switch v := read.(type) {
		case nil:
		case int64, uint64:
			g.value = read
		case int:
			g.value = int64(v)
		case int32:
			g.value = int64(v)
		case []byte:
			// The text protocol answers every value as text: an integer
			// (or a boolean stored as one) is compared as the integer.
			if c.Field.Type == driver.TypeInt || c.Field.Type == driver.TypeBool {
				if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
					g.value = n
					break
				}
			}
			g.value, g.bytes = read, true
		case string:
			g.value, g.bytes = []byte(v), true
		case time.Time:
			g.value = v.Format(mysqlGuardTime)
		default:
			return buf, false
		}
		buf = append(buf, g)
	}
	return buf, true
}
