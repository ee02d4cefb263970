package sqltest_test

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
)

// A verification that only counts (a key with a rate limit and no quota,
// in its open window, as the manager remembers it) is one statement on
// every database, MySQL and MariaDB included, which have no UPDATE …
// RETURNING: core.DB.IncrementValue answering the count, the rest of the
// row pinned by the guard, rather than a read and a guarded write.
func TestCountingVerificationIsOneStatement(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		c := &countingExec{Beginner: sluicesql.FromDB(e.sqldb)}
		a, err := sluicesql.New(e.ctx, c, sluicesql.Options{Dialect: e.b.dialect})
		if err != nil {
			t.Fatal(err)
		}
		db, err := core.New(a, core.WithSchema(e.schema))
		if err != nil {
			t.Fatal(err)
		}
		m, err := apikey.New(db)
		if err != nil {
			t.Fatal(err)
		}
		plain, _, err := m.Create(e.ctx, apikey.CreateParams{ReferenceID: "count", Name: "counted",
			RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Hour, Max: 100}})
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(1); i <= 4; i++ {
			c.n.Store(0)
			r, err := m.Verify(e.ctx, plain)
			if err != nil || !r.Valid || r.Key.RequestCount != i || r.Key.Name != "counted" {
				t.Fatalf("verification %d: %+v, %v; want valid, count %d, name %q", i, r, err, i, "counted")
			}
			if n := c.n.Load(); i > 1 && n != 1 {
				t.Errorf("verification %d of a remembered key sent %d statements, want 1", i, n)
			}
		}
		// Another program stamps lastRequest, which a count pins, as
		// Better Auth's own verification does on every request: the count
		// misses and the write returning the row answers (1 + 2
		// statements where the count is IncrementValue's, as on MySQL);
		// the key's next verifications take that write at once.
		want := []int64{1, 1}
		if db.NativeValueIncrement() {
			want = []int64{3, 2}
		}
		for i, w := range want {
			stamp := time.Now().UTC().Truncate(time.Millisecond).Add(time.Duration(i) * time.Millisecond)
			if _, err := e.db.UpdateMany(e.ctx, core.ModelAPIKey, []core.Where{core.Eq("referenceId", "count")}, map[string]any{"lastRequest": stamp}); err != nil {
				t.Fatal(err)
			}
			c.n.Store(0)
			r, err := m.Verify(e.ctx, plain)
			if err != nil || !r.Valid || r.Key.RequestCount != int64(5+i) || !r.Key.LastRequest.Equal(stamp) {
				t.Fatalf("verification after stamp %d: %+v, %v; want valid, count %d, lastRequest %v", i+1, r, err, 5+i, stamp)
			}
			if n := c.n.Load(); n != w {
				t.Errorf("verification after stamp %d sent %d statements, want %d", i+1, n, w)
			}
		}
		// No one else writes it now: after the backoff its counts are
		// one statement again.
		for range 64 {
			if r, err := m.Verify(e.ctx, plain); err != nil || !r.Valid {
				t.Fatalf("%+v, %v", r, err)
			}
		}
		c.n.Store(0)
		if r, err := m.Verify(e.ctx, plain); err != nil || !r.Valid || r.Key.RequestCount != 71 {
			t.Fatalf("after the backoff: %+v, %v; want valid, count 71", r, err)
		}
		if n := c.n.Load(); n != 1 {
			t.Errorf("after the backoff a verification sent %d statements, want 1", n)
		}
	})
}

// countingExec counts the statements the engine sends through a pool,
// those of the transactions it begins included (BEGIN and COMMIT as one
// each).
type countingExec struct {
	sluicesql.Beginner
	n atomic.Int64
}

func (c *countingExec) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c.n.Add(1)
	return c.Beginner.Exec(ctx, q, args...)
}

func (c *countingExec) Query(ctx context.Context, q string, args ...any) (sluicesql.Rows, error) {
	c.n.Add(1)
	return c.Beginner.Query(ctx, q, args...)
}

func (c *countingExec) Begin(ctx context.Context) (sluicesql.Tx, error) {
	c.n.Add(1)
	tx, err := c.Beginner.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &countingTx{Tx: tx, n: &c.n}, nil
}

// countingTx counts a transaction's statements, its end included.
type countingTx struct {
	sluicesql.Tx
	n *atomic.Int64
}

func (t *countingTx) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	t.n.Add(1)
	return t.Tx.Exec(ctx, q, args...)
}

func (t *countingTx) Query(ctx context.Context, q string, args ...any) (sluicesql.Rows, error) {
	t.n.Add(1)
	return t.Tx.Query(ctx, q, args...)
}

func (t *countingTx) Commit(ctx context.Context) error {
	t.n.Add(1)
	return t.Tx.Commit(ctx)
}

func (t *countingTx) Rollback(ctx context.Context) error {
	t.n.Add(1)
	return t.Tx.Rollback(ctx)
}
