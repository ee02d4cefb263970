package adaptertest

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// breakage is one way in which an adapter was found to diverge from the
// contract; each broken adapter below has exactly one.
type breakage int

const (
	// flatNesting runs a nested Transaction's fn in the caller's
	// transaction, so its error rolls nothing back (bun and ent before the
	// SQL engine).
	flatNesting breakage = iota + 1
	// padSpace ignores trailing spaces, as MariaDB's PAD SPACE collations do.
	padSpace
	// caseFolding ignores case, as a _ci collation does.
	caseFolding
	// normalising stores Unicode in a normal form (NFKC here, for the two
	// sequences the suite uses), as some collations compare.
	normalising
	// replacingInvalid rewrites invalid UTF-8 to U+FFFD, as bun did on
	// SQLite and MariaDB. core refuses such strings first, so no case may
	// catch it: it shows the refusal does not depend on the adapter.
	replacingInvalid
	// wrappingOverflow lets an int64 wrap around (SQLite's +MinInt64).
	wrappingOverflow
	// realOverflow turns the column into a float on overflow and commits
	// it (SQLite's c = c + ? past MaxInt64).
	realOverflow
	// plainOverflow refuses overflow, but with an error that is not
	// core.ErrInvalid.
	plainOverflow
	// abortOnConflict makes a transaction unusable after a unique
	// conflict, as PostgreSQL does without a savepoint around the statement.
	abortOnConflict
	// unclassifiedConflict passes a unique violation through without
	// core.ErrConflict (an error code the adapter does not know).
	unclassifiedConflict
	// deadlockVictims returns to the caller the deadlock its write ran
	// into while another write was in flight (gorm on MariaDB, error 1213).
	deadlockVictims
	// retriedVictims is deadlockVictims fixed: the adapter retries the
	// victim's write, so it passes.
	retriedVictims
	// keepsOnError runs a transaction's fn without a transaction, so an
	// error from fn rolls nothing back.
	keepsOnError
)

// broken wraps core's memory adapter, or one of its transaction adapters,
// and breaks one rule. Everything else is memory's, so each broken adapter
// keeps the rest of the contract, which the tests below check.
type broken struct {
	inner   driver.Adapter // has IncrementOne and Transaction
	how     breakage
	tx      *txState      // nil outside a transaction
	victims *atomic.Int64 // writes begun so far, shared by every handle on one store
}

// txState is what a transaction remembers across calls.
type txState struct {
	mu      sync.Mutex
	aborted bool
}

var (
	errAborted      = errors.New("ERROR: current transaction is aborted, commands ignored until end of transaction block (SQLSTATE 25P02)")
	errRolledBack   = errors.New("commit unexpectedly resulted in rollback")
	errDeadlock1213 = errors.New("Error 1213 (40001): Deadlock found when trying to get lock; try restarting transaction")
)

func (b *broken) wrap(tx driver.Adapter, st *txState) *broken {
	return &broken{inner: tx, how: b.how, tx: st, victims: b.victims}
}

func (b *broken) str(s string) string {
	switch b.how {
	case padSpace:
		return strings.TrimRight(s, " ")
	case caseFolding:
		return strings.ToLower(s)
	case normalising:
		return strings.NewReplacer("e\u0301", "\u00e9", "\uff4b", "k").Replace(s)
	case replacingInvalid:
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

func (b *broken) values(in []driver.Assignment) []driver.Assignment {
	out := make([]driver.Assignment, len(in))
	for i, a := range in {
		if s, ok := a.Value.(string); ok {
			a.Value = b.str(s)
		}
		out[i] = a
	}
	return out
}

func (b *broken) where(in []driver.Where) []driver.Where {
	out := make([]driver.Where, len(in))
	for i, w := range in {
		switch v := w.Value.(type) {
		case string:
			w.Value = b.str(v)
		case []any:
			list := make([]any, len(v))
			for j, x := range v {
				if s, ok := x.(string); ok {
					x = b.str(s)
				}
				list[j] = x
			}
			w.Value = list
		}
		out[i] = w
	}
	return out
}

// call runs one adapter call with the breakage's error handling around it.
// write marks the calls that take write locks on a database.
func call[T any](b *broken, write bool, do func() (T, error)) (T, error) {
	var zero T
	if b.tx != nil && b.how == abortOnConflict {
		b.tx.mu.Lock()
		aborted := b.tx.aborted
		b.tx.mu.Unlock()
		if aborted {
			return zero, errAborted
		}
	}
	if write && (b.how == deadlockVictims || b.how == retriedVictims) && b.victim() {
		if b.how == deadlockVictims {
			return zero, errDeadlock1213 // the database rolled the statement back
		}
		// retriedVictims: the statement rolled back, so running it again is safe
	}
	v, err := do()
	if errors.Is(err, core.ErrConflict) {
		switch b.how {
		case unclassifiedConflict:
			err = errors.New(err.Error()) // the same text, without the class
		case abortOnConflict:
			if b.tx != nil {
				b.tx.mu.Lock()
				b.tx.aborted = true
				b.tx.mu.Unlock()
			}
		}
	}
	return v, err
}

// victim reports whether this write is chosen as a deadlock victim: it is
// when another write begins while it waits, as a database's lock wait
// would, at most a short while. Concurrent writes overlap every time;
// sequential ones never do.
func (b *broken) victim() bool {
	mine := b.victims.Add(1)
	for start := time.Now(); time.Since(start) < nonAtomicLatency; {
		if b.victims.Load() != mine {
			return true
		}
		runtime.Gosched()
	}
	return false
}

func (b *broken) Create(ctx context.Context, t *driver.Table, values []driver.Assignment) (driver.Record, error) {
	return call(b, true, func() (driver.Record, error) { return b.inner.Create(ctx, t, b.values(values)) })
}

func (b *broken) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	return call(b, false, func() (driver.Record, error) { return b.inner.FindOne(ctx, t, b.where(where)) })
}

func (b *broken) FindMany(ctx context.Context, t *driver.Table, where []driver.Where, o driver.FindOptions) ([]driver.Record, error) {
	return call(b, false, func() ([]driver.Record, error) { return b.inner.FindMany(ctx, t, b.where(where), o) })
}

func (b *broken) Update(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (driver.Record, error) {
	return call(b, true, func() (driver.Record, error) { return b.inner.Update(ctx, t, b.where(where), b.values(set)) })
}

func (b *broken) UpdateMany(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (int64, error) {
	return call(b, true, func() (int64, error) { return b.inner.UpdateMany(ctx, t, b.where(where), b.values(set)) })
}

func (b *broken) Delete(ctx context.Context, t *driver.Table, where []driver.Where) (bool, error) {
	return call(b, true, func() (bool, error) { return b.inner.Delete(ctx, t, b.where(where)) })
}

func (b *broken) DeleteMany(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	return call(b, true, func() (int64, error) { return b.inner.DeleteMany(ctx, t, b.where(where)) })
}

func (b *broken) Count(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	return call(b, false, func() (int64, error) { return b.inner.Count(ctx, t, b.where(where)) })
}

func (b *broken) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	return call(b, true, func() (driver.Record, error) {
		where, set := b.where(where), b.values(set)
		rec, err := b.inner.(driver.Incrementer).IncrementOne(ctx, t, where, inc, set)
		if !errors.Is(err, core.ErrInvalid) {
			return rec, err
		}
		switch b.how {
		case plainOverflow:
			return nil, errors.New(strings.ReplaceAll(err.Error(), core.ErrInvalid.Error()+": ", ""))
		case wrappingOverflow, realOverflow:
			// write what the broken database computes, by primary key
			cur, ferr := b.inner.FindOne(ctx, t, where)
			if ferr != nil || cur == nil {
				return nil, err
			}
			write := append([]driver.Assignment(nil), set...)
			for _, d := range inc {
				v, ok := cur[d.Column].(int64)
				switch {
				case !ok:
				case b.how == wrappingOverflow:
					write = append(write, driver.Assignment{Column: d.Column, Value: v + d.By})
				case (d.By > 0 && v > math.MaxInt64-d.By) || (d.By < 0 && v < math.MinInt64-d.By):
					write = append(write, driver.Assignment{Column: d.Column, Value: float64(v) + float64(d.By)})
				default:
					write = append(write, driver.Assignment{Column: d.Column, Value: v + d.By})
				}
			}
			pk := t.PrimaryKey().Name
			return b.inner.Update(ctx, t, cols(core.Eq(pk, cur[pk])), write)
		}
		return rec, err
	})
}

func (b *broken) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	if b.tx != nil && b.how == flatNesting || b.how == keepsOnError {
		return fn(ctx, b) // no savepoint: fn's writes are the caller's
	}
	st := b.tx
	if st == nil {
		st = &txState{}
	}
	st.mu.Lock()
	abortedBefore := st.aborted
	st.mu.Unlock()
	err := b.inner.(driver.Transactor).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		if err := fn(ctx, b.wrap(tx, st)); err != nil {
			return err
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.aborted && b.tx == nil {
			return errRolledBack // COMMIT of an aborted transaction rolls back
		}
		return nil
	})
	if err != nil && b.tx != nil {
		// ROLLBACK TO SAVEPOINT clears the abort the nested part caused
		st.mu.Lock()
		st.aborted = abortedBefore
		st.mu.Unlock()
	}
	return err
}

// brokenHarness serves a broken adapter that implements every optional
// interface and a harness that declares SeveralPools, so that no case skips.
type brokenHarness struct {
	m       *memory.Memory
	how     breakage
	victims *atomic.Int64
}

func brokenMaker(how breakage) HarnessMaker {
	return func(context.Context, *testing.T) (Harness, error) {
		return brokenHarness{m: memory.New(), how: how, victims: new(atomic.Int64)}, nil
	}
}

func (h brokenHarness) MakeAdapter(context.Context, *core.Schema) (driver.Adapter, error) {
	return &broken{inner: h.m, how: h.how, victims: h.victims}, nil
}

func (h brokenHarness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	return h.MakeAdapter(ctx, s)
}

func (h brokenHarness) Capabilities() Capabilities {
	return Capabilities{SeveralPools: true}
}

func (h brokenHarness) Close() {}

// TestContractCasesCatchBrokenAdapters is the proof that the divergence
// cases can fail: against each broken adapter, every contract case runs
// (the IncrementOne ones through the fallback too), and exactly the cases
// for the rule it breaks must fail. So each case catches its breakage, and
// catches it for the reason it names, not for a side effect.
func TestContractCasesCatchBrokenAdapters(t *testing.T) {
	nested := []string{"NestedTransactionRollsBackItsOwnWrites", "NestedInTxRollsBackItsOwnWrites", "Fallback/NestedInTxRollsBackItsOwnWrites"}
	distinct := []string{"DistinctStringsStayDistinct", "Fallback/DistinctStringsStayDistinct"}
	// core's fallback computes and checks the sum itself, so its variant passes
	overflow := []string{"IncrementOverflowRefused"}
	for _, b := range []struct {
		name  string
		how   breakage
		fails []string
	}{
		{"FlatNestedTransaction", flatNesting, nested},
		{"PadSpaceCollation", padSpace, distinct},
		{"CaseInsensitiveCollation", caseFolding, distinct},
		{"NormalisingCollation", normalising, distinct},
		{"InvalidUTF8ToReplacementChar", replacingInvalid, nil},
		{"OverflowWraps", wrappingOverflow, overflow},
		{"OverflowTurnsColumnReal", realOverflow, overflow},
		{"OverflowNotErrInvalid", plainOverflow, overflow},
		{"ConflictAbortsTransaction", abortOnConflict, []string{"ConflictInsideTransactionKeepsItUsable"}},
		{"ConflictNotErrConflict", unclassifiedConflict, []string{"UniqueConflict", "ConflictInsideTransactionKeepsItUsable"}},
	} {
		t.Run(b.name, func(t *testing.T) {
			var mu sync.Mutex
			var failed []string
			for _, c := range contractCases() {
				t.Run(c.name, func(t *testing.T) {
					rec := runRecorded(t, brokenMaker(b.how), c)
					require.False(t, rec.Skipped(), "the case skipped: %v", rec.messages)
					if rec.Failed() {
						mu.Lock()
						failed = append(failed, c.name)
						mu.Unlock()
						t.Logf("caught: %s", rec.summary())
					}
				})
			}
			want := append([]string(nil), b.fails...)
			sort.Strings(want)
			sort.Strings(failed)
			assert.Equal(t, want, failed, "the contract cases that fail against an adapter that breaks only this rule")
		})
	}
}

// TestRecorderSeesPassingCases checks the recorder itself: against the
// memory adapter, which keeps the contract, no case records a failure, so
// the failures above are the broken adapters' and not the recorder's.
func TestRecorderSeesPassingCases(t *testing.T) {
	maker := func(context.Context, *testing.T) (Harness, error) {
		return brokenHarness{m: memory.New(), victims: new(atomic.Int64)}, nil // how == 0: nothing broken
	}
	for _, c := range contractCases() {
		t.Run(c.name, func(t *testing.T) {
			rec := runRecorded(t, maker, c)
			require.False(t, rec.Failed(), "%v", rec.messages)
			require.False(t, rec.Skipped(), "%v", rec.messages)
		})
	}
}

// TestDeadlockVictimsCaught is the proof for the contention race: an
// adapter that returns a deadlock victim's error to its caller fails it,
// every time, and the same adapter retrying its victims passes.
func TestDeadlockVictimsCaught(t *testing.T) {
	c := caseNamed(t, raceCases(), "DeadlockVictimsRetried")
	t.Run("returned", func(t *testing.T) {
		rec := runRecorded(t, brokenMaker(deadlockVictims), c)
		require.True(t, rec.Failed(), "an adapter that returns deadlock victims passed %s\ncontract: %s", c.name, c.contract)
		require.Contains(t, strings.Join(rec.messages, "\n"), errDeadlock1213.Error())
		t.Logf("caught: %s", rec.summary())
	})
	t.Run("retried", func(t *testing.T) {
		rec := runRecorded(t, brokenMaker(retriedVictims), c)
		require.False(t, rec.Failed(), "%v", rec.messages)
	})
}
