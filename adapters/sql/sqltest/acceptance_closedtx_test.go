package sqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// Acceptance probe (qa): a caller's *sql.Tx already committed or rolled
// back, or begun on another database, is refused with core.ErrInvalid by
// Limiter.In for a lone rule and a policy, denied under WithFailOpen, and
// nothing is stored.
func TestAcceptanceEndedOrForeignSQLTxRefused(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		l, err := ratelimit.New(ratelimit.Database(e.db), ratelimit.WithFailOpen())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		rule := ratelimit.Rule{Name: "a", Window: time.Minute, Max: 5}
		p := ratelimit.Policy{rule, {Name: "b", Window: time.Hour, Max: 9}}
		committed, err := e.sqldb.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := committed.Commit(); err != nil {
			t.Fatal(err)
		}
		rolledBack, err := e.sqldb.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = rolledBack.Rollback()
		other := e.b.open(t, e.dsn) // another *sql.DB, same server: BindTx refuses what it can tell
		t.Cleanup(func() { _ = other.Close() })
		foreign, err := other.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer foreign.Rollback()
		for name, tx := range map[string]*sql.Tx{"committed": committed, "rolled back": rolledBack, "of another *sql.DB": foreign} {
			v := l.In(tx)
			if d, err := v.Consume(ctx, "ctx-lone", rule); !errors.Is(err, core.ErrInvalid) || d.Allowed {
				t.Errorf("a %s tx: Consume = %+v, %v; want denied with core.ErrInvalid", name, d, err)
			}
			if d, err := v.ConsumePolicy(ctx, "ctx-pol", p, 1); !errors.Is(err, core.ErrInvalid) || d.Allowed {
				t.Errorf("a %s tx: ConsumePolicy = %+v, %v; want denied with core.ErrInvalid", name, d, err)
			}
		}
		if n, err := e.db.Count(ctx, core.ModelRateLimit); err != nil || n != 0 {
			t.Errorf("%d rows after the refusals (%v), want none", n, err)
		}
	})
}
