package driver

import (
	"context"
	"errors"
)

// PairIncrementer is implemented by adapters that can run an IncrementOne
// whose one delta is on a non-nullable integer column and answer, in one
// statement, that column's value after the write and a second integer
// column's value, which the write leaves as it is, instead of the whole
// row (core.DB.IncrementPair).
//
// The write has IncrementOne's contract (see [Incrementer]) for where and
// the delta inc. core.DB has already added to where the guards that b
// states (0 ≤ inc.Column + inc.By ≤ b.ValueMax, b.Min ≤ b.Column ≤ b.Max),
// so an adapter may rely on both values lying in their ranges: on MySQL
// and MariaDB, which have no UPDATE … RETURNING, the SQL engine packs the
// two into the one integer LAST_INSERT_ID(expr) reports. An adapter that
// cannot answer this request in one statement returns [ErrNoPair] having
// written nothing, and core.DB runs IncrementOne instead.
type PairIncrementer interface {
	IncrementPair(ctx context.Context, t *Table, where []Where, inc Delta, b PairBounds) (value, other int64, ok bool, err error)
}

// PairBounds bounds an IncrementPair: the incremented column's value after
// the write lies in [0, ValueMax], and Column, the other column answered,
// holds a value in [Min, Max].
type PairBounds struct {
	Column   string
	Min, Max int64
	ValueMax int64
}

// ErrNoPair is what a [PairIncrementer] returns for a request it cannot
// answer in one statement (for the SQL engine on MySQL: ranges too wide to
// pack into one integer, or an executor whose results carry no last insert
// id). Nothing was written.
var ErrNoPair = errors.New("driver: the pair increment needs more than one statement here")
