package sluicesql

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// IncrementAll applies guarded writes to several rows, all or nothing, in
// one statement (see [driver.AllIncrementer]), on a dialect that declares
// it (traits.lockAllOrder: PostgreSQL); elsewhere it returns
// [driver.ErrNoAll] having sent nothing, and the caller writes in a
// transaction. On PostgreSQL the statement is:
//
//	WITH l AS MATERIALIZED (SELECT <columns> FROM t WHERE key IN (…)
//	                        ORDER BY key COLLATE "C" FOR UPDATE),
//	     c AS (SELECT l.*, CASE WHEN key = k1 AND <guard 1.1> THEN 1 … ELSE -1 END AS sluice_case FROM l),
//	     o AS (SELECT count(*) = n AND bool_and(sluice_case >= 0 OR <optional>) AS sluice_ok FROM c),
//	     u AS (UPDATE t SET col = CASE c.sluice_case WHEN 1 THEN t.col + d … ELSE t.col END, …
//	           FROM c, o WHERE t.pk = c.pk AND c.sluice_case >= 0 AND o.sluice_ok RETURNING 1)
//	SELECT c.*, o.sluice_ok FROM c, o
//
// Why it is exact under concurrency (each step checked on the server):
//   - l's FOR UPDATE locks the rows in byte order (LockRows runs above
//     the Sort) and, under READ COMMITTED, waits for a concurrent writer
//     and returns the row's latest version, not the statement's snapshot;
//   - c, o and the answer are computed once (a CTE referenced more than
//     once is materialised) from those locked versions, so every guard
//     is judged on rows no one else can change before the statement ends;
//   - u's UPDATE finds the snapshot's version of a row a concurrent
//     writer changed, and re-reads its latest version (EvalPlanQual) to
//     write on: the locked version, so each delta adds to the count the
//     guards judged.
//
// At REPEATABLE READ or SERIALIZABLE a row changed since the snapshot
// fails the statement with a serialization failure, which the engine
// retries outside a transaction, as it does any statement.
func (a *Adapter) IncrementAll(ctx context.Context, t *driver.Table, column string, writes []driver.RowWrite) (bool, error) {
	if a.e.t.lockAllOrder == "" {
		return false, driver.ErrNoAll
	}
	if len(writes) == 0 {
		return false, fmt.Errorf("%w: IncrementAll on %s: no writes", core.ErrInvalid, t.Name)
	}
	b := a.newBuilder()
	b.renderAll(t, column, writes)
	var recs []driver.Record
	err := a.retry(ctx, func() (err error) {
		recs, err = a.query(ctx, b.sb.String(), b.args)
		return err
	})
	if err != nil {
		return false, err
	}
	return readAll(column, writes, recs)
}

// The names the statement gives its parts. core's naming admits no
// "sluice_" prefix on a model's columns that could collide: the CTEs'
// columns are the table's and these two.
const (
	allCase = "sluice_case"
	allOK   = "sluice_ok"
)

// renderAll writes IncrementAll's statement (see IncrementAll), part by
// part: l locks, c and o judge, u writes, then the answer.
func (b *builder) renderAll(t *driver.Table, column string, writes []driver.RowWrite) {
	b.renderAllLocked(t, column, writes)
	b.renderAllCases(column, writes)
	b.renderAllUpdate(t, writes)
	b.write(" SELECT c.*, o." + allOK + " FROM c, o")
}

// renderAllLocked writes l: the writes' rows, locked in key byte order.
func (b *builder) renderAllLocked(t *driver.Table, column string, writes []driver.RowWrite) {
	b.write("WITH l AS MATERIALIZED (SELECT ")
	b.columns(t)
	b.write(" FROM ")
	b.ident(t.Name)
	b.write(" WHERE ")
	b.ident(column)
	b.write(" IN (")
	for i, w := range writes {
		if i > 0 {
			b.write(", ")
		}
		b.arg(w.Key)
	}
	b.write(") ORDER BY ")
	b.ident(column)
	b.write(b.t.lockAllOrder)
	b.write(" FOR UPDATE)")
}

// renderAllCases writes c, each locked row with the index of the first
// case that holds on it (numbered across writes, -1 for none), and o,
// whether every write found its row and a case that holds, or may go
// without.
func (b *builder) renderAllCases(column string, writes []driver.RowWrite) {
	b.write(", c AS (SELECT l.*, CASE")
	n := 0
	for _, w := range writes {
		for _, cs := range w.Cases {
			n++
			b.write(" WHEN ")
			b.ident(column)
			b.write(" = ")
			b.arg(w.Key)
			for _, wh := range cs.Where {
				b.write(" AND ")
				b.cond(wh)
			}
			fmt.Fprintf(&b.sb, " THEN %d", n)
		}
	}
	b.write(" ELSE -1 END AS " + allCase + " FROM l), o AS (SELECT count(*) = ")
	fmt.Fprintf(&b.sb, "%d", len(writes))
	b.write(" AND bool_and(" + allCase + " >= 0")
	for _, w := range writes {
		if w.Optional {
			b.write(" OR ")
			b.ident(column)
			b.write(" = ")
			b.arg(w.Key)
		}
	}
	b.write(") AS " + allOK + " FROM c)")
}

// renderAllUpdate writes u: each column any case writes, set by the case
// that holds on the row, and only when o found every write admitted.
func (b *builder) renderAllUpdate(t *driver.Table, writes []driver.RowWrite) {
	pk := t.PrimaryKey().Name
	b.write(", u AS (UPDATE ")
	b.ident(t.Name)
	b.write(" AS sluice_t SET ")
	for i, col := range writtenColumns(writes) {
		if i > 0 {
			b.write(", ")
		}
		b.ident(col)
		b.write(" = CASE c." + allCase)
		b.renderAllColumnCases(col, writes)
		b.write(" ELSE sluice_t.")
		b.ident(col)
		b.write(" END")
	}
	b.write(" FROM c, o WHERE sluice_t.")
	b.ident(pk)
	b.write(" = c.")
	b.ident(pk)
	b.write(" AND c." + allCase + " >= 0 AND o." + allOK + " RETURNING 1)")
}

// renderAllColumnCases writes, for one column, a WHEN for every case
// that increments or sets it, numbered as renderAllCases numbered them.
func (b *builder) renderAllColumnCases(col string, writes []driver.RowWrite) {
	n := 0
	for _, w := range writes {
		for _, cs := range w.Cases {
			n++
			for _, d := range cs.Inc {
				if d.Column == col {
					fmt.Fprintf(&b.sb, " WHEN %d THEN sluice_t.", n)
					b.ident(col)
					b.write(" + ")
					b.arg(d.By)
				}
			}
			for _, s := range cs.Set {
				if s.Column == col {
					fmt.Fprintf(&b.sb, " WHEN %d THEN ", n)
					if s.Value == nil {
						b.write("NULL")
					} else {
						b.arg(s.Value)
					}
				}
			}
		}
	}
}

// writtenColumns lists, once each and in first-seen order, the columns
// the writes' cases increment or set.
func writtenColumns(writes []driver.RowWrite) []string {
	var cols []string
	seen := map[string]bool{}
	add := func(c string) {
		if !seen[c] {
			seen[c] = true
			cols = append(cols, c)
		}
	}
	for _, w := range writes {
		for _, cs := range w.Cases {
			for _, d := range cs.Inc {
				add(d.Column)
			}
			for _, s := range cs.Set {
				add(s.Column)
			}
		}
	}
	return cols
}

// readAll reports the statement's answer in writes: each row as locked,
// the case that held (from the global number back to the write's own),
// and whether the writes applied.
func readAll(column string, writes []driver.RowWrite, recs []driver.Record) (bool, error) {
	first := make([]int, len(writes)) // the global number of each write's case 0, less one
	n := 0
	for i, w := range writes {
		writes[i].Row, writes[i].Case = nil, -1
		first[i] = n
		n += len(w.Cases)
	}
	ok := len(recs) == len(writes)
	for _, r := range recs {
		g, err := driver.ParseInt(r[allCase])
		if err != nil {
			return false, fmt.Errorf("IncrementAll: %s: %w", allCase, err)
		}
		applied, _ := r[allOK].(bool)
		ok = ok && applied
		i := writeOf(column, writes, r)
		if i < 0 {
			return false, fmt.Errorf("IncrementAll: a row answered for no write's key")
		}
		delete(r, allCase)
		delete(r, allOK)
		writes[i].Row = r
		if g > 0 {
			writes[i].Case = int(g) - 1 - first[i]
		}
	}
	return ok, nil
}

// writeOf finds the write a returned row belongs to, by its key column
// (the key bound, as the database answers it: a string key is text on
// every driver the engine runs).
func writeOf(column string, writes []driver.RowWrite, r driver.Record) int {
	v := r[column]
	if bs, isBytes := v.([]byte); isBytes {
		v = string(bs)
	}
	for i, w := range writes {
		if w.Key == v {
			return i
		}
	}
	return -1
}
