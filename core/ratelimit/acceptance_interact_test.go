package ratelimit_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// Acceptance probes (qa): how policies meet the limiter's other features
// (write combining, the denial cache, transactions, shadow and calendar
// rules), through the public API.

// policyBurst releases n policy requests at once on l and returns how
// many were admitted.
func policyBurst(t *testing.T, l *ratelimit.Limiter, key string, p ratelimit.Policy, n int) int64 {
	t.Helper()
	var admitted atomic.Int64
	testrace.Release(n, func(int) {
		d, err := l.ConsumePolicy(context.Background(), key, p, 1)
		if err != nil {
			t.Error(err)
		}
		if d.Allowed {
			admitted.Add(1)
		}
	})
	return admitted.Load()
}

// Write combining and the denial cache do not change a policy's exact
// count: 48 requests at once on a 5/min + 12/h policy admit exactly 5 in
// each minute, 12 in the hour, on every storage.
func TestAcceptancePolicyWithCombiningAndCache(t *testing.T) {
	p := ratelimit.Policy{{Name: "min", Window: time.Minute, Max: 5}, {Name: "hour", Window: time.Hour, Max: 12}}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		opts := []ratelimit.Option{ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(64)}
		if b.db != nil {
			opts = append(opts, ratelimit.WithWriteCombining())
		}
		l := newLimiter(t, b.storage(c), opts...)
		for i, want := range []int64{5, 5, 2, 0} {
			c.Set(time.Duration(i) * time.Minute)
			if got := policyBurst(t, l, "pc", p, 48); got != want {
				t.Errorf("minute %d: %d admitted, want %d", i, got, want)
			}
		}
		d, err := l.CheckPolicy(context.Background(), "pc", p)
		if err != nil || d.Rules[1].Remaining != 0 || d.DeniedBy != "hour" {
			t.Errorf("after the hour's 12: %+v, %v", d, err)
		}
	})
}

// A policy in the caller's transaction: a rollback refunds every rule, a
// commit keeps every rule, a denial inside charges none, and a shadow rule
// is refunded with the others.
func TestAcceptancePolicyInTransaction(t *testing.T) {
	p := ratelimit.Policy{
		{Name: "min", Window: time.Minute, Max: 3},
		{Name: "hour", Window: time.Hour, Max: 10},
		{Name: "try", Window: time.Minute, Max: 1, Shadow: true},
	}
	for name, db := range txDBs(t) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now))
			consume := func(ctx context.Context, v *ratelimit.Limiter, cost int64) ratelimit.Decision {
				t.Helper()
				d, err := v.ConsumePolicy(ctx, "tx", p, cost)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			inTx(t, db, false, func(ctx context.Context, tx *core.DB) {
				if d := consume(ctx, l.In(tx), 3); !d.Allowed || !d.WouldDeny {
					t.Errorf("cost 3 in the rolled-back tx: %+v", d)
				}
			})
			untouched(t, l, "tx", p)
			inTx(t, db, true, func(ctx context.Context, tx *core.DB) {
				v := l.In(tx)
				if d := consume(ctx, v, 1); !d.Allowed || d.WouldDeny {
					t.Errorf("first in the committed tx: %+v", d)
				}
				if d := consume(ctx, v, 3); d.Allowed || d.DeniedBy != "min" {
					t.Errorf("cost 3 over min's 2 left: %+v", d)
				}
			})
			d, err := l.CheckPolicy(context.Background(), "tx", p)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []int64{2, 9, 0} {
				if d.Rules[i].Remaining != want {
					t.Errorf("rule %q after the commit: remaining %d, want %d", d.Rules[i].Name, d.Rules[i].Remaining, want)
				}
			}
		})
	}
}

// A calendar rule in a policy at its period's last millisecond and the
// next midnight: concurrent requests are counted in the period their
// clock reading names, exactly Max in each.
func TestAcceptanceCalendarPolicyBoundaryRace(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	midnight := time.Date(2026, 3, 30, 0, 0, 0, 0, berlin) // after the 23-hour day
	p := ratelimit.Policy{{Name: "day", Max: 7, Calendar: ratelimit.Day, Location: berlin}, {Name: "burst", Window: time.Second, Max: 1000}}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		s := b.storage(c)
		var before, after atomic.Int64
		old := newLimiter(t, s, ratelimit.WithClock(func() time.Time { return midnight.Add(-time.Millisecond) }))
		next := newLimiter(t, s, ratelimit.WithClock(func() time.Time { return midnight }))
		c.Clock.Set(midnight)
		testrace.Release(40, func(i int) {
			l, n := old, &before
			if i%2 == 1 {
				l, n = next, &after
			}
			d, err := l.ConsumePolicy(context.Background(), "cal", p, 1)
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				n.Add(1)
				if i%2 == 1 && !d.Rules[0].Reset.Equal(time.Date(2026, 3, 31, 0, 0, 0, 0, berlin)) {
					t.Errorf("the new day's reset: %v", d.Rules[0].Reset)
				}
			}
		})
		// the two days share one Database row: whichever day wrote last
		// holds it, and a late reading of the old day after the new one
		// opened is denied; never more than 7 in a day.
		if before.Load() > 7 || after.Load() > 7 || after.Load() == 0 {
			t.Errorf("admitted %d in the old day, %d in the new: want at most 7 each and some in the new", before.Load(), after.Load())
		}
	})
}

// Reset of a key that a policy limits: the operator's reset of a client.
func TestAcceptancePolicyReset(t *testing.T) {
	p := ratelimit.Policy{{Name: "min", Window: time.Minute, Max: 2}, {Name: "hour", Window: time.Hour, Max: 5}}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(64))
		ctx := context.Background()
		for range 3 {
			if _, err := l.ConsumePolicy(ctx, "rk", p, 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.ResetPolicy(ctx, "rk", p); err != nil {
			t.Fatal(err)
		}
		untouched(t, l, "rk", p)
		d, err := l.ConsumePolicy(ctx, "rk", p, 1)
		if err != nil || !d.Allowed || d.Rules[0].Remaining != 1 {
			t.Errorf("after ResetPolicy: %+v, %v", d, err)
		}
	})
}

// A view on a transaction refuses what it must for a policy as for a lone
// rule, denied whatever the failure policy and nothing charged: a closed
// transaction, one of another database, write combining; and every reset
// (Reset, ResetRule under every mode, ResetPolicy) is refused in it.
func TestAcceptancePolicyInTransactionRefuses(t *testing.T) {
	ctx := context.Background()
	p := ratelimit.Policy{{Name: "a", Window: time.Minute, Max: 5}, {Name: "b", Window: time.Hour, Max: 9}}
	db, other := txDBs(t)["native"], txDBs(t)["fallback"]
	refused := func(t *testing.T, v *ratelimit.Limiter, what string) {
		t.Helper()
		d, err := v.ConsumePolicy(ctx, "k", p, 1)
		if !errors.Is(err, core.ErrInvalid) || d.Allowed {
			t.Errorf("%s: ConsumePolicy = %+v, %v; want denied with core.ErrInvalid", what, d, err)
		}
	}
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithFailOpen())
	var closed *core.DB
	inTx(t, db, true, func(_ context.Context, tx *core.DB) { closed = tx })
	refused(t, l.In(closed), "a committed transaction")
	if d, err := l.In(closed).Consume(ctx, "k", p[0]); !errors.Is(err, core.ErrInvalid) || d.Allowed {
		t.Errorf("a committed transaction: Consume = %+v, %v; want denied with core.ErrInvalid", d, err)
	}
	inTx(t, other, false, func(_ context.Context, tx *core.DB) { refused(t, l.In(tx), "another database's transaction") })
	lc := newLimiter(t, ratelimit.Database(db), ratelimit.WithWriteCombining(), ratelimit.WithFailOpen())
	inTx(t, db, false, func(_ context.Context, tx *core.DB) { refused(t, lc.In(tx), "write combining") })
	for _, m := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.SlidingWindow, ratelimit.GCRA} {
		lm := newLimiter(t, ratelimit.Database(db), ratelimit.WithMode(m))
		if _, err := lm.ConsumePolicy(ctx, "r-"+m.String(), p, 1); err != nil {
			t.Fatal(err)
		}
		inTx(t, db, false, func(ctx context.Context, tx *core.DB) {
			v := lm.In(tx)
			if err := v.ResetRule(ctx, "r-"+m.String(), p[0]); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%v: ResetRule in a transaction = %v, want core.ErrInvalid", m, err)
			}
			if err := v.ResetPolicy(ctx, "r-"+m.String(), p); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%v: ResetPolicy in a transaction = %v, want core.ErrInvalid", m, err)
			}
		})
	}
	if n, err := other.Count(ctx, core.ModelRateLimit); err != nil || n != 0 {
		t.Errorf("%d rows in the other database (%v), want none", n, err)
	}
}
