package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

const ruleInTxCommits = "InTx runs its function in a transaction whose writes, IncrementOne included, are visible inside it and stored when it returns nil"

func caseInTxCommits(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "tx", map[string]any{"hits": 1})
	var created int64
	err := f.DB.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
		c, err := tx.Create(ctx, counterModel, map[string]any{"name": "made"})
		if err != nil {
			return err
		}
		created = c.Int("id")
		row, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: counterModel,
			Where: []core.Where{core.Eq("id", r.Int("id"))}, Increment: map[string]int64{"hits": 1}})
		if err != nil || !ok {
			return fmt.Errorf("IncrementOne in a transaction: ok=%v err=%v", ok, err)
		}
		seen, ok, err := tx.FindOne(ctx, counterModel, core.Eq("id", r.Int("id")))
		if err != nil || !ok || seen.Int("hits") != row.Int("hits") {
			return fmt.Errorf("inside the transaction FindOne saw %v (ok=%v err=%v), IncrementOne returned %v", seen, ok, err, row)
		}
		return nil
	})
	require.NoError(t, err)
	assert.EqualValues(t, 2, reread(t, f, counterModel, r.Int("id")).Int("hits"))
	reread(t, f, counterModel, created)
}

const ruleInTxRollsBack = "InTx rolls back every write of its function when the function returns an error, and returns that error"

func caseInTxRollsBack(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "tx", map[string]any{"hits": 1})
	boom := errors.New("boom")
	err := f.DB.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
		if _, err := tx.Create(ctx, counterModel, map[string]any{"name": "ghost"}); err != nil {
			return err
		}
		if _, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: counterModel,
			Where: []core.Where{core.Eq("id", r.Int("id"))}, Increment: map[string]int64{"hits": 5}}); err != nil || !ok {
			return fmt.Errorf("IncrementOne in a transaction: ok=%v err=%v", ok, err)
		}
		if _, err := tx.UpdateMany(ctx, counterModel, nil, map[string]any{"label": "tx"}); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	requireSame(t, r, reread(t, f, counterModel, r.Int("id")), "the rolled-back transaction changed the row")
	n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("name", "ghost"))
	require.NoError(t, err)
	assert.Zero(t, n, "the rolled-back transaction's row exists")
}

// errNoNesting ends the probe transaction of caseNestedTransaction when the
// transaction adapter does not implement driver.Transactor.
var errNoNesting = errors.New("the transaction adapter does not implement driver.Transactor")

const ruleNestedTransaction = "a transaction adapter that implements driver.Transactor opens a nested transaction (a savepoint): when the nested fn returns an error, only the writes made inside it roll back, the enclosing transaction goes on and commits its own writes, and a nested fn that returns nil keeps its writes"

func caseNestedTransaction(t testing.TB, f *Fixture) {
	ctx := f.Ctx
	tb, col := counterTable(t, f)
	r := newCounter(t, f, "nest", map[string]any{"hits": 1})
	victim := newCounter(t, f, "victim", nil)
	id, name, hits := col("id"), col("name"), col("hits")
	boom := errors.New("boom")
	err := f.Adapter.(driver.Transactor).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		var p problems
		if _, err := tx.Create(ctx, tb, []driver.Assignment{{Column: name, Value: "outer"}}); err != nil {
			return err
		}
		if _, err := tx.Update(ctx, tb, cols(core.Eq(id, r.Int("id"))), []driver.Assignment{{Column: hits, Value: int64(2)}}); err != nil {
			return err
		}
		nested, ok := tx.(driver.Transactor)
		if !ok {
			return errNoNesting
		}
		err := nested.Transaction(ctx, func(ctx context.Context, inner driver.Adapter) error {
			if _, err := inner.Create(ctx, tb, []driver.Assignment{{Column: name, Value: "inner"}}); err != nil {
				return err
			}
			// the row the outer transaction changed, changed again
			if _, err := inner.Update(ctx, tb, cols(core.Eq(id, r.Int("id"))), []driver.Assignment{{Column: hits, Value: int64(50)}}); err != nil {
				return err
			}
			if _, err := inner.Delete(ctx, tb, cols(core.Eq(id, victim.Int("id")))); err != nil {
				return err
			}
			var q problems
			q.check(countWhere(ctx, &q, inner, tb, "inside the nested transaction", core.Eq(name, "inner")) == 1, "the nested transaction does not see its own row")
			if err := q.err(); err != nil {
				return err
			}
			return boom
		})
		p.check(errors.Is(err, boom), "the nested Transaction returned %v, want the error its fn returned", err)
		p.check(countWhere(ctx, &p, tx, tb, "inner", core.Eq(name, "inner")) == 0, "after the nested rollback the outer transaction still sees the nested row")
		p.check(countWhere(ctx, &p, tx, tb, "hits", core.Eq(id, r.Int("id")), core.Eq(hits, int64(2))) == 1, "after the nested rollback the row does not hold the outer transaction's hits = 2")
		p.check(countWhere(ctx, &p, tx, tb, "victim", core.Eq(id, victim.Int("id"))) == 1, "after the nested rollback the row the nested transaction deleted is still gone")
		err = nested.Transaction(ctx, func(ctx context.Context, inner driver.Adapter) error {
			_, err := inner.Create(ctx, tb, []driver.Assignment{{Column: name, Value: "kept"}})
			return err
		})
		p.check(err == nil, "a nested Transaction whose fn returned nil failed: %v", err)
		if _, err := tx.Create(ctx, tb, []driver.Assignment{{Column: name, Value: "last"}}); err != nil {
			p.check(false, "the outer transaction is unusable after a nested rollback: %v", err)
		}
		return p.err()
	})
	if errors.Is(err, errNoNesting) {
		t.Skip("the transaction adapter does not implement driver.Transactor: nested transactions are unsupported, and InTx refuses them")
	}
	require.NoError(t, err, "the outer transaction")
	for _, want := range []struct {
		name string
		n    int64
	}{{"outer", 1}, {"kept", 1}, {"last", 1}, {"inner", 0}, {"victim", 1}} {
		n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("name", want.name))
		require.NoError(t, err)
		assert.Equal(t, want.n, n, "committed rows named %q", want.name)
	}
	assert.EqualValues(t, 2, reread(t, f, counterModel, r.Int("id")).Int("hits"), "the outer write committed, the nested one rolled back")
}

// txNests reports whether the adapter's transaction adapter implements
// driver.Transactor.
func txNests(t testing.TB, f *Fixture) bool {
	t.Helper()
	var nests bool
	err := f.Adapter.(driver.Transactor).Transaction(f.Ctx, func(_ context.Context, tx driver.Adapter) error {
		_, nests = tx.(driver.Transactor)
		return nil
	})
	require.NoError(t, err, "an empty transaction")
	return nests
}

const ruleNestedInTx = "InTx called on a transaction's DB runs a nested transaction: an error from the inner fn rolls back the inner writes, IncrementOne included, and nothing else, and the outer transaction commits; a transaction adapter without driver.Transactor makes the nested InTx fail with ErrUnsupported before calling fn"

func caseNestedInTx(t testing.TB, f *Fixture) {
	r := newCounter(t, f, "nest", map[string]any{"hits": 1})
	nests := txNests(t, f)
	boom := errors.New("boom")
	err := f.DB.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
		var p problems
		if _, err := tx.Create(ctx, counterModel, map[string]any{"name": "outer"}); err != nil {
			return err
		}
		if _, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: counterModel,
			Where: []core.Where{core.Eq("id", r.Int("id"))}, Increment: map[string]int64{"hits": 1}}); err != nil || !ok {
			return fmt.Errorf("outer IncrementOne: ok=%v err=%v", ok, err)
		}
		called := false
		err := tx.InTx(ctx, func(ctx context.Context, inner *core.DB) error {
			called = true
			if _, err := inner.Create(ctx, counterModel, map[string]any{"name": "inner"}); err != nil {
				return err
			}
			if _, ok, err := inner.IncrementOne(ctx, core.IncrementRequest{Model: counterModel,
				Where: []core.Where{core.Eq("id", r.Int("id"))}, Increment: map[string]int64{"hits": 100}, Set: map[string]any{"label": "inner"}}); err != nil || !ok {
				return fmt.Errorf("inner IncrementOne: ok=%v err=%v", ok, err)
			}
			return boom
		})
		if nests {
			p.check(errors.Is(err, boom), "the nested InTx returned %v, want the error its fn returned", err)
		} else {
			p.check(errors.Is(err, core.ErrUnsupported) && !called, "without nested transactions, the nested InTx returned %v (fn called: %v), want ErrUnsupported before fn", err, called)
		}
		seen, ok, err := tx.FindOne(ctx, counterModel, core.Eq("id", r.Int("id")))
		p.check(err == nil && ok && seen.Int("hits") == 2 && seen.IsNull("label"),
			"after the nested rollback the outer transaction reads %v (ok=%v err=%v), want hits 2 and no label", seen, ok, err)
		if _, err := tx.Create(ctx, counterModel, map[string]any{"name": "after"}); err != nil {
			p.check(false, "the outer transaction is unusable after the nested one: %v", err)
		}
		return p.err()
	})
	require.NoError(t, err, "the outer transaction")
	for _, want := range []struct {
		name string
		n    int64
	}{{"outer", 1}, {"after", 1}, {"inner", 0}} {
		n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("name", want.name))
		require.NoError(t, err)
		assert.Equal(t, want.n, n, "committed rows named %q", want.name)
	}
	row := reread(t, f, counterModel, r.Int("id"))
	assert.EqualValues(t, 2, row.Int("hits"), "the outer increment committed, the inner one rolled back")
	assert.True(t, row.IsNull("label"), "the inner Set survived its rollback: label %v", row["label"])
}

const ruleConflictInTx = "inside InTx, a duplicate unique key fails that one call with ErrConflict (Create, Update and IncrementOne alike) and leaves the transaction usable: its other writes, before and after the conflict, commit"

func caseConflictInTx(t testing.TB, f *Fixture) {
	taken := newCounter(t, f, "taken", map[string]any{"slot": "taken"})
	_, err := f.DB.Create(f.Ctx, core.ModelRateLimit, map[string]any{"key": "k", "count": 1})
	require.NoError(t, err)
	var before, after int64
	err = f.DB.InTx(f.Ctx, func(ctx context.Context, tx *core.DB) error {
		var p problems
		b, err := tx.Create(ctx, counterModel, map[string]any{"name": "before"})
		if err != nil {
			return err
		}
		before = b.Int("id")
		_, err = tx.Create(ctx, counterModel, map[string]any{"name": "dup", "slot": "taken"})
		p.check(errors.Is(err, core.ErrConflict), "Create with a taken slot: %v, want ErrConflict", err)
		_, err = tx.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k"})
		p.check(errors.Is(err, core.ErrConflict), "Create with a taken rate-limit key: %v, want ErrConflict", err)
		_, _, err = tx.Update(ctx, counterModel, []core.Where{core.Eq("id", before)}, map[string]any{"slot": "taken"})
		p.check(errors.Is(err, core.ErrConflict), "Update to a taken slot: %v, want ErrConflict", err)
		_, _, err = tx.IncrementOne(ctx, core.IncrementRequest{Model: counterModel, Where: []core.Where{core.Eq("id", before)},
			Increment: map[string]int64{"hits": 1}, Set: map[string]any{"slot": "taken"}})
		p.check(errors.Is(err, core.ErrConflict), "IncrementOne setting a taken slot: %v, want ErrConflict", err)
		// the transaction goes on: the limiter's create-or-increment does exactly this
		row, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", "k")},
			Increment: map[string]int64{"count": 1}})
		p.check(err == nil && ok && row.Int("count") == 2, "IncrementOne after the conflicts: %v, ok=%v, err=%v; want count 2", row, ok, err)
		a, err := tx.Create(ctx, counterModel, map[string]any{"name": "after"})
		p.check(err == nil, "Create after the conflicts: %v", err)
		after = a.Int("id")
		b, ok, err = tx.FindOne(ctx, counterModel, core.Eq("id", before))
		p.check(err == nil && ok && b.Int("hits") == 0 && b.IsNull("slot"), "the row before the conflicts reads %v (ok=%v err=%v), want it unchanged", b, ok, err)
		return p.err()
	})
	require.NoError(t, err, "a transaction in which unique conflicts were reported must commit")
	reread(t, f, counterModel, before)
	reread(t, f, counterModel, after)
	n, err := f.DB.Count(f.Ctx, counterModel, core.Eq("slot", "taken"))
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "rows holding the taken slot")
	requireSame(t, taken, reread(t, f, counterModel, taken.Int("id")), "the row holding the slot")
	rl, ok, err := f.DB.FindOne(f.Ctx, core.ModelRateLimit, core.Eq("key", "k"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.EqualValues(t, 2, rl.Int("count"), "the increment after the conflict committed")
	n, err = f.DB.Count(f.Ctx, counterModel)
	require.NoError(t, err)
	assert.EqualValues(t, 3, n, "counter rows: taken, before and after")
}
