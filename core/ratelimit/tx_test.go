package ratelimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

var errRollback = errors.New("roll back")

// inTx runs fn in a transaction of db, committing when commit is true and
// rolling back otherwise.
func inTx(t *testing.T, db *core.DB, commit bool, fn func(ctx context.Context, tx *core.DB)) {
	t.Helper()
	err := db.InTx(context.Background(), func(ctx context.Context, tx *core.DB) error {
		fn(ctx, tx)
		if !commit {
			return errRollback
		}
		return nil
	})
	if commit && err != nil || !commit && !errors.Is(err, errRollback) {
		t.Fatalf("InTx: %v", err)
	}
}

// txDBs are the database storages a view can bind: native IncrementOne
// and core's transaction fallback (each attempt in a savepoint).
func txDBs(t *testing.T) map[string]*core.DB {
	t.Helper()
	out := map[string]*core.DB{}
	for name, a := range map[string]func() *memory.Memory{"native": memory.New, "fallback": memory.New} {
		var db *core.DB
		var err error
		if name == "native" {
			db, err = core.New(a())
		} else {
			db, err = core.New(a().WithoutIncrementOne())
		}
		if err != nil {
			t.Fatal(err)
		}
		out[name] = db
	}
	return out
}

func mustDecide(t *testing.T, l *ratelimit.Limiter, ctx context.Context, key string, rule ratelimit.Rule, cost int64) ratelimit.Decision {
	t.Helper()
	d, err := l.ConsumeN(ctx, key, rule, cost)
	if err != nil {
		t.Fatalf("ConsumeN(%q, %d): %v", key, cost, err)
	}
	return d
}

// TestInCommitKeepsRollbackRefunds: a charge made through In commits and
// rolls back with the caller's transaction, under every mode, and the
// next decision outside is the one the committed rows call for.
func TestInCommitKeepsRollbackRefunds(t *testing.T) {
	for name, db := range txDBs(t) {
		for _, m := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.BetterAuthWindow, ratelimit.SlidingWindow, ratelimit.GCRA} {
			t.Run(name+"/"+m.String(), func(t *testing.T) {
				c := newClock()
				l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithMode(m))
				rule := ratelimit.Rule{Window: time.Minute, Max: 4}
				key := "k-" + m.String()
				inTx(t, db, true, func(ctx context.Context, tx *core.DB) {
					if d := mustDecide(t, l.In(tx), ctx, key, rule, 2); !d.Allowed {
						t.Errorf("in the committed transaction: %+v", d)
					}
				})
				inTx(t, db, false, func(ctx context.Context, tx *core.DB) {
					if d := mustDecide(t, l.In(tx), ctx, key, rule, 2); !d.Allowed || d.Remaining != 0 {
						t.Errorf("in the rolled-back transaction: %+v, want admitted with 0 remaining", d)
					}
				})
				// 2 committed, 2 refunded: 2 fit, a third does not.
				if d := mustDecide(t, l, context.Background(), key, rule, 2); !d.Allowed || d.Remaining != 0 {
					t.Errorf("outside after the rollback: %+v, want admitted with 0 remaining", d)
				}
				if d := mustDecide(t, l, context.Background(), key, rule, 1); d.Allowed {
					t.Errorf("outside, over the limit: %+v, want denied", d)
				}
			})
		}
	}
}

// TestInLeavesNoMemory: a view records nothing in the limiter's memory.
// A denial inside a transaction that rolls back would otherwise be cached
// and deny outside a request the database has room for; the broken
// variant that shares the memory is caught.
func TestInLeavesNoMemory(t *testing.T) {
	run := func(t *testing.T, in func(l *ratelimit.Limiter, tx any) *ratelimit.Limiter) (ratelimit.Decision, int) {
		db := txDBs(t)["native"]
		c := newClock()
		l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now))
		rule := ratelimit.Rule{Window: time.Minute, Max: 3}
		mustDecide(t, l, context.Background(), "k", rule, 2)
		inTx(t, db, false, func(ctx context.Context, tx *core.DB) {
			v := in(l, tx)
			if d := mustDecide(t, v, ctx, "k", rule, 1); !d.Allowed {
				t.Errorf("first in the transaction: %+v", d)
			}
			if d := mustDecide(t, v, ctx, "k", rule, 1); d.Allowed {
				t.Errorf("second in the transaction: %+v, want denied", d)
			}
		})
		cached := ratelimit.DenialCacheLen(l)
		return mustDecide(t, l, context.Background(), "k", rule, 1), cached
	}
	t.Run("In", func(t *testing.T) {
		d, cached := run(t, (*ratelimit.Limiter).In)
		if !d.Allowed || d.Remaining != 0 || cached != 0 {
			t.Errorf("outside after the rollback: %+v with %d cached denials; want admitted, 0 remaining, none cached", d, cached)
		}
	})
	t.Run("broken variant sharing the memory is caught", func(t *testing.T) {
		if d, cached := run(t, ratelimit.InSharingCaches); d.Allowed || cached == 0 {
			t.Errorf("the broken view went unnoticed: %+v, %d cached", d, cached)
		}
	})
}

// TestInRefuses: what a view cannot do fails with core.ErrInvalid,
// denied under WithFailOpen too, and charges nothing.
func TestInRefuses(t *testing.T) {
	ctx := context.Background()
	rule := ratelimit.Rule{Window: time.Minute, Max: 5}
	db := txDBs(t)["native"]
	other := txDBs(t)["native"]
	refused := func(t *testing.T, v *ratelimit.Limiter, want string) {
		t.Helper()
		d, err := v.Consume(ctx, "k", rule)
		if !errors.Is(err, core.ErrInvalid) || d.Allowed || !strings.Contains(err.Error(), want) {
			t.Errorf("Consume = %+v, %v; want denied, ErrInvalid naming %q", d, err, want)
		}
	}
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithFailOpen())
	t.Run("nil transaction", func(t *testing.T) { refused(t, l.In(nil), "nil transaction") })
	t.Run("a DB not bound to a transaction", func(t *testing.T) { refused(t, l.In(db), "not bound to a transaction") })
	t.Run("a transaction of another core.DB", func(t *testing.T) {
		inTx(t, other, true, func(_ context.Context, tx *core.DB) { refused(t, l.In(tx), "another core.DB") })
	})
	t.Run("write combining", func(t *testing.T) {
		lc := newLimiter(t, ratelimit.Database(db), ratelimit.WithWriteCombining())
		inTx(t, db, true, func(_ context.Context, tx *core.DB) { refused(t, lc.In(tx), "WithWriteCombining") })
	})
	t.Run("leases", func(t *testing.T) {
		ll := newLimiter(t, ratelimit.Database(db), ratelimit.WithLeases(2))
		inTx(t, db, true, func(_ context.Context, tx *core.DB) { refused(t, ll.In(tx), "leases") })
	})
	t.Run("memory storage", func(t *testing.T) {
		lm := newLimiter(t, ratelimit.Memory(10))
		inTx(t, db, true, func(_ context.Context, tx *core.DB) { refused(t, lm.In(tx), "needs Database storage") })
	})
	t.Run("Reset and StartPruning", func(t *testing.T) {
		inTx(t, db, true, func(ctx context.Context, tx *core.DB) {
			v := l.In(tx)
			if err := v.Reset(ctx, "k"); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("Reset = %v, want ErrInvalid", err)
			}
			if err := v.StartPruning(ctx, time.Minute, nil); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("StartPruning = %v, want ErrInvalid", err)
			}
		})
	})
	if n, err := db.Count(ctx, core.ModelRateLimit); err != nil || n != 0 {
		t.Errorf("%d rows after refusals (%v), want none charged", n, err)
	}
	if n, err := other.Count(ctx, core.ModelRateLimit); err != nil || n != 0 {
		t.Errorf("%d rows in the other DB, want none", n)
	}
}

// TestInPolicy: a policy charged through In commits and rolls back with
// the caller's transaction, every rule of it.
func TestInPolicy(t *testing.T) {
	for name, db := range txDBs(t) {
		t.Run(name, func(t *testing.T) {
			l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(newClock().Now))
			p := ratelimit.Policy{{Name: "burst", Window: time.Second, Max: 2}, {Name: "daily", Window: time.Hour, Max: 3}}
			for _, commit := range []bool{true, false} {
				inTx(t, db, commit, func(ctx context.Context, tx *core.DB) {
					if d, err := l.In(tx).ConsumePolicy(ctx, "p", p, 1); err != nil || !d.Allowed {
						t.Errorf("in the transaction (commit %v): %+v, %v", commit, d, err)
					}
				})
			}
			d, err := l.ConsumePolicy(context.Background(), "p", p, 1)
			if err != nil || !d.Allowed || d.Remaining != 0 {
				t.Errorf("outside: %+v, %v; want admitted with the burst rule's 0 remaining (1 committed + this one)", d, err)
			}
		})
	}
}
