package sqltest_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// Acceptance probe (qa): a limiter's first decisions, before its schema
// check has passed, made at once by callers whose transactions hold every
// connection of the pool (Limiter.In) and by a plain decision that needs
// one: the views decide through their own transactions and commit, and
// then the plain decision gets its connection. Nothing waits for a
// connection that a waiter holds.
func TestAcceptanceViewsAndPlainDecisionShareAFullPool(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		if e.b.name == "sqlite" {
			t.Skip("SQLite: one writer at a time, the second transaction's first write waits for the first's commit")
		}
		pool := e.b.open(t, e.dsn)
		pool.SetMaxOpenConns(2)
		t.Cleanup(func() { _ = pool.Close() })
		a, err := sluicesql.NewDB(e.ctx, pool, e.b.dialect)
		if err != nil {
			t.Fatal(err)
		}
		db, err := core.New(a, core.WithSchema(e.schema))
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
		l, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		rule := ratelimit.Rule{Window: time.Minute, Max: 10}
		// The keys' rows exist (made by another limiter, whose check is its
		// own), so that the views' inserts do not deadlock on MariaDB's gap
		// locks: what is probed is the pool.
		seeder, err := ratelimit.New(ratelimit.Database(e.db))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"pool-a", "pool-b", "pool-plain"} {
			if _, err := seeder.Consume(e.ctx, k, rule); err != nil {
				t.Fatal(err)
			}
		}
		_ = seeder.Close()
		// bounded, so that a deadlock fails the test instead of hanging it
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		defer cancel()
		txs := make(chan func(), 2)
		views := make(chan error, 2)
		for i := range 2 {
			begun := make(chan struct{})
			go func() {
				views <- db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
					close(begun)
					start := make(chan struct{})
					txs <- func() { close(start) }
					<-start
					_, err := l.In(tx).Consume(ctx, "pool-"+string(rune('a'+i)), rule)
					return err
				})
			}()
			<-begun
		}
		// Both connections are held; the plain decision waits for one.
		waits := pool.Stats().WaitCount
		plain := make(chan error, 1)
		go func() {
			_, err := l.Consume(ctx, "pool-plain", rule)
			plain <- err
		}()
		for pool.Stats().WaitCount == waits && ctx.Err() == nil {
			runtime.Gosched() // until the plain decision waits for a connection
		}
		(<-txs)()
		(<-txs)()
		for range 2 {
			if err := <-views; err != nil {
				t.Errorf("a view: %v", err)
			}
		}
		if err := <-plain; err != nil {
			t.Errorf("the plain decision: %v", err)
		}
	})
}
