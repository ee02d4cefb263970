package sluicesql

import (
	"context"
	"fmt"
	"math"

	"github.com/sluice-go/sluice/core/driver"
)

var _ driver.PairIncrementer = (*Adapter)(nil)

// IncrementPair is IncrementValue answering a second column beside the
// incremented one (see [driver.PairIncrementer]), in one statement.
//
// On PostgreSQL and SQLite it is IncrementOne's UPDATE … RETURNING with the
// two columns returned. On MySQL and MariaDB it is one UPDATE whose
// LAST_INSERT_ID(expr) packs the two values, which the guard core.DB added
// keeps in their ranges, into one integer:
//
//	UPDATE t SET c = LAST_INSERT_ID((c + by) * span + (d - min)) DIV span
//	WHERE <where> ORDER BY pk LIMIT 1
//
// with span = max − min + 1: the value after the write is the packed
// integer's quotient by span, the other column min plus its remainder. The
// one expression reads only the row as it was, so the order in which the
// server applies assignments does not matter. Ranges whose product passes
// int64, or an executor whose results do not carry the last insert id,
// answer driver.ErrNoPair.
//
// The statement's shape names b.Column through the guard core.DB puts in
// where (b.Min ≤ d ≤ b.Max), so the statement cache tells pairs apart.
func (a *Adapter) IncrementPair(ctx context.Context, t *driver.Table, where []driver.Where, inc driver.Delta, b driver.PairBounds) (int64, int64, bool, error) {
	if inc.By == 0 || !guards(where, b.Column) {
		return 0, 0, false, driver.ErrNoPair
	}
	incs := [1]driver.Delta{inc}
	if a.e.features.UpdateReturning {
		rec, err := a.updateReturning(ctx, t, kindUpdateReturningPair, where, incs[:], nil, func(bd *builder) {
			bd.ident(inc.Column)
			bd.write(", ")
			bd.ident(b.Column)
		})
		if err != nil || rec == nil {
			return 0, 0, false, err
		}
		v, err := driver.ParseInt(rec[inc.Column])
		if err != nil {
			return 0, 0, false, fmt.Errorf("%s: column %q: %w", a.e.name(), inc.Column, err)
		}
		o, err := driver.ParseInt(rec[b.Column])
		if err != nil {
			return 0, 0, false, fmt.Errorf("%s: column %q: %w", a.e.name(), b.Column, err)
		}
		return v, o, true, nil
	}
	span, packs := pairSpan(b)
	if !packs || a.e.mysql.Load()&mysqlLastID == 0 {
		return 0, 0, false, driver.ErrNoPair
	}
	q, args := a.stmt(t, kindUpdatePair, where, incs[:], nil, func(bd *builder) {
		bd.updateFirst(t, where, func() {
			bd.ident(inc.Column)
			bd.write(" = LAST_INSERT_ID((")
			bd.ident(inc.Column)
			bd.write(" + ")
			bd.arg(inc.By)
			bd.write(") * ")
			bd.arg(span)
			bd.write(" + (")
			bd.ident(b.Column)
			bd.write(" - ")
			bd.arg(b.Min)
			bd.write(")) DIV ")
			bd.arg(span)
		})
	})
	packed, ok, err := a.execLastID(ctx, q, args)
	if err != nil || !ok {
		return 0, 0, false, err
	}
	if packed < 0 || packed/span > b.ValueMax {
		return 0, 0, false, fmt.Errorf("%s: IncrementPair: the packed value %d is outside its range (span %d, most %d)", a.e.name(), packed, span, b.ValueMax)
	}
	return packed / span, b.Min + packed%span, true, nil
}

// pairSpan returns the width of b's range of the other column, and whether
// the two values pack into one non-negative int64: ValueMax × span +
// (span − 1) ≤ MaxInt64.
func pairSpan(b driver.PairBounds) (int64, bool) {
	if b.Max < b.Min || b.ValueMax < 0 {
		return 0, false
	}
	width := uint64(b.Max) - uint64(b.Min) // Max − Min, exact in uint64
	if width >= math.MaxInt64 {
		return 0, false
	}
	span := int64(width) + 1
	return span, b.ValueMax <= (math.MaxInt64-(span-1))/span
}

// guards reports whether where bounds column on both sides, as core.DB's
// IncrementPair guard does: the packing relies on it, and the statement
// cache tells pairs apart by it.
func guards(where []driver.Where, column string) bool {
	var lo, hi bool
	for _, w := range where {
		if w.Column == column {
			lo = lo || w.Op == driver.OpGte
			hi = hi || w.Op == driver.OpLte
		}
	}
	return lo && hi
}
