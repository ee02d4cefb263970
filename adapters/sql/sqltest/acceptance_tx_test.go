package sqltest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

var errQARollback = errors.New("qa: roll back")

// Acceptance probe (qa): a policy charged inside callers' transactions
// (Limiter.In on the tx of core.DB.InTx) on every database, from two
// connection pools at once, half the transactions rolling back what they
// were admitted: only the committed charges count, exactly — what the
// tight rule has left admitted and committed, none over, none wrongly denied — and
// the stored rows hold what the committed transactions charged.
func TestAcceptancePolicyInTransactionsRace(t *testing.T) {
	const n = 24
	p := ratelimit.Policy{{Name: "min", Window: time.Minute, Max: 6}, {Name: "hour", Window: time.Hour, Max: 9}}
	for _, mode := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.SlidingWindow, ratelimit.GCRA} {
		t.Run(mode.String(), func(t *testing.T) { policyInTransactionsRace(t, mode, p, n) })
	}
}

func policyInTransactionsRace(t *testing.T, mode ratelimit.Mode, p ratelimit.Policy, n int) {
	forEach(t, func(t *testing.T, e *env) {
		dbs, limiters := twoPoolLimiters(t, e, mode)
		// One committed admission first, so that the key's rows exist: on
		// MariaDB concurrent callers' transactions inserting a fresh key
		// deadlock on the key index's gap locks, round after round (see
		// qa's report), which is not what this probe measures.
		if err := e.db.InTx(e.ctx, func(ctx context.Context, tx *core.DB) error {
			_, err := limiters[0].In(tx).ConsumePolicy(ctx, "qa-tx", p, 1)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var committed, rolledBack, retried atomic.Int64
		adaptertest.Release(n, func(i int) {
			c, r, retries := chargeInTx(t, dbs[i%2], limiters[i%2], p, i)
			if c {
				committed.Add(1)
			}
			if r {
				rolledBack.Add(1)
			}
			retried.Add(int64(retries))
		})
		// Half the requests commit whatever they are admitted, more than
		// the 5 the tight rule has left: exactly 5 commit admitted.
		if got := committed.Load(); got != 5 {
			t.Errorf("%d committed admissions, want exactly 5 (%d admitted then rolled back, %d aborted and repeated)", got, rolledBack.Load(), retried.Load())
		}
		d, err := limiters[0].CheckPolicy(context.Background(), "qa-tx", p)
		if err != nil {
			t.Fatal(err)
		}
		if d.Rules[0].Remaining != 0 || d.Rules[1].Remaining != 3 {
			t.Errorf("stored after the commits: min remaining %d (want 0), hour remaining %d (want 3)", d.Rules[0].Remaining, d.Rules[1].Remaining)
		}
		t.Logf("%d admitted then rolled back, %d aborted and repeated", rolledBack.Load(), retried.Load())
	})
}

// twoPoolLimiters is e's core.DB and one over a second pool, as two
// servers would have, each with a limiter in mode on one fixed clock.
func twoPoolLimiters(t *testing.T, e *env, mode ratelimit.Mode) ([]*core.DB, []*ratelimit.Limiter) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := ratelimit.WithClock(func() time.Time { return now })
	peerSQL := e.b.open(t, e.dsn)
	t.Cleanup(func() { _ = peerSQL.Close() })
	pa, err := sluicesql.NewDB(e.ctx, peerSQL, e.b.dialect)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := core.New(pa, core.WithSchema(e.schema))
	if err != nil {
		t.Fatal(err)
	}
	dbs := []*core.DB{e.db, peer}
	var limiters []*ratelimit.Limiter
	for _, db := range dbs {
		l, err := ratelimit.New(ratelimit.Database(db), clock, ratelimit.WithMode(mode))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		limiters = append(limiters, l)
	}
	return dbs, limiters
}

// chargeInTx is request i: a transaction on db charging p through l, one
// of each two rolling back what it was admitted (i%4 < 2), repeated when
// the database aborts it. It reports whether it committed an admission or
// rolled one back, and how often it was repeated.
func chargeInTx(t *testing.T, db *core.DB, l *ratelimit.Limiter, p ratelimit.Policy, i int) (committed, rolledBack bool, retries int) {
	for attempt := 0; ; attempt++ {
		admitted := false
		err := db.InTx(context.Background(), func(ctx context.Context, tx *core.DB) error {
			d, err := l.In(tx).ConsumePolicy(ctx, "qa-tx", p, 1)
			if err != nil {
				return err
			}
			admitted = d.Allowed
			if admitted && i%4 < 2 {
				return errQARollback
			}
			return nil
		})
		switch {
		case errors.Is(err, errQARollback):
			return false, true, attempt
		case errors.Is(err, core.ErrContention) && attempt < 100:
			continue // the database aborted the caller's transaction: repeat it
		case err != nil:
			t.Errorf("request %d, attempt %d: %v", i, attempt, err)
			return false, false, attempt
		}
		return admitted, false, attempt
	}
}
