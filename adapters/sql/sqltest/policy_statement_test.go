package sqltest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// unlockedAll is an executor that runs IncrementAll's statement without
// its FOR UPDATE: the guards are then judged on the statement's snapshot,
// which a concurrent statement may already have changed, while the
// UPDATE still writes on the latest version. It is the broken
// one-statement variant the race below must catch.
type unlockedAll struct{ sluicesql.Beginner }

func (u unlockedAll) Query(ctx context.Context, q string, args ...any) (sluicesql.Rows, error) {
	if strings.HasPrefix(q, "WITH l AS MATERIALIZED") {
		q = strings.Replace(q, " FOR NO KEY UPDATE", "", 1)
	}
	return u.Beginner.Query(ctx, q, args...)
}

// statementPolicy is the two-rule policy the statement tests decide.
var statementPolicy = ratelimit.Policy{{Name: "short", Window: time.Hour, Max: 5}, {Name: "long", Window: 24 * time.Hour, Max: 1000}}

// postgresEnv returns an env on PostgreSQL, skipping t without the server.
func postgresEnv(t *testing.T) *env {
	t.Helper()
	b := postgresBackend()
	if adaptertest.PostgresDSN(t) == "" {
		t.Skip("SLUICE_POSTGRES_DSN is not set")
	}
	return newEnv(t, b)
}

// limiterOver returns a limiter on e's tables through the engine over x
// (an executor that wraps e's pool).
func limiterOver(t *testing.T, e *env, x sluicesql.Beginner) *ratelimit.Limiter {
	t.Helper()
	a, err := sluicesql.New(e.ctx, x, sluicesql.Options{Dialect: e.b.dialect})
	if err != nil {
		t.Fatal(err)
	}
	db, err := core.New(a, core.WithSchema(e.schema))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ratelimit.New(ratelimit.Database(db))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A two-rule policy on PostgreSQL is one statement once its rows exist
// (core.DB.IncrementAll), and it stays exact under a burst: 32 requests
// at once over a rule of 5 admit exactly the 3 left, round after round,
// and both rows count exactly the admitted. The same burst through the
// broken variant (guards on the unlocked snapshot) over-admits, which
// proves the race can fail.
func TestPolicyStatementRace(t *testing.T) {
	e := postgresEnv(t)
	e.sqldb.SetMaxOpenConns(8)
	policy := statementPolicy
	const burst, rounds = 32, 12
	run := func(t *testing.T, x sluicesql.Beginner, tag string) (over int) {
		l := limiterOver(t, e, x)
		for r := range rounds {
			key := fmt.Sprintf("%s-%d", tag, r)
			if _, err := l.ConsumePolicy(e.ctx, key, policy, 1); err != nil { // creates the rows: the transaction
				t.Fatal(err)
			}
			ctx, trips := driver.WithRoundTrips(e.ctx)
			if _, err := l.ConsumePolicy(ctx, key, policy, 1); err != nil {
				t.Fatal(err)
			}
			if n := trips.Count(); n != 1 {
				t.Fatalf("a policy whose rows exist took %d round trips, want 1 (the statement)", n)
			}
			var admitted atomic.Int64
			var failed atomic.Value
			adaptertest.Release(burst, func(int) {
				d, err := l.ConsumePolicy(e.ctx, key, policy, 1)
				if err != nil {
					failed.Store(err)
				}
				if d.Allowed {
					admitted.Add(1)
				}
			})
			if err, _ := failed.Load().(error); err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
			for _, name := range []string{"short", "long"} {
				row, _, err := e.db.FindOne(e.ctx, core.ModelRateLimit, core.Eq("key", "{"+key+"}"+ratelimit.PolicySeparator+name))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := row.Int("count"), 2+admitted.Load(); got != want {
					t.Errorf("round %d: the %s rule's row counts %d, want %d (2 before the burst and %d admitted)", r, name, got, want, admitted.Load())
				}
			}
			if n := admitted.Load(); n > 3 {
				over++
				t.Logf("round %d: admitted %d of %d with 3 left", r, n, burst)
			} else if n != 3 {
				t.Errorf("round %d: admitted %d of %d with 3 left: under-admitted", r, n, burst)
			}
		}
		return over
	}
	t.Run("locked", func(t *testing.T) {
		if over := run(t, sluicesql.FromDB(e.sqldb), "locked"); over != 0 {
			t.Errorf("over-admitted in %d of %d rounds", over, rounds)
		}
	})
	t.Run("broken/unlocked", func(t *testing.T) {
		if over := run(t, unlockedAll{sluicesql.FromDB(e.sqldb)}, "unlocked"); over == 0 {
			t.Errorf("guards judged on an unlocked snapshot never over-admitted in %d rounds: the race cannot fail", rounds)
		}
	})
}

// IncrementAll on PostgreSQL writes every row or none, judging each case
// on the row as stored, and reports each row as it was with the case that
// held; a missing row or a required write with no case writes nothing; an
// optional write that fits applies, one that does not fails nothing. On
// MySQL, MariaDB and SQLite it is driver.ErrNoAll, nothing sent.
func TestIncrementAllAllOrNothing(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		for _, k := range []string{"a", "b"} {
			if _, err := e.db.Create(e.ctx, core.ModelRateLimit, map[string]any{"key": k, "count": int64(3), "lastRequest": int64(100)}); err != nil {
				t.Fatal(err)
			}
		}
		room := func(most int64) []core.IncrementRequest {
			return []core.IncrementRequest{
				{Where: []core.Where{core.Gt("lastRequest", 50), core.Lte("count", most)}, Increment: map[string]int64{"count": 1}},
				{Where: []core.Where{core.Lte("lastRequest", 50)}, Set: map[string]any{"count": int64(1), "lastRequest": int64(200)}},
			}
		}
		counts := func() []int64 {
			var out []int64
			for _, k := range []string{"a", "b"} {
				row, _, err := e.db.FindOne(e.ctx, core.ModelRateLimit, core.Eq("key", k))
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, row.Int("count"))
			}
			return out
		}
		type want struct {
			ok     bool
			cases  []int
			counts []int64
		}
		for i, c := range []struct {
			writes []core.RowWrite
			want   want
		}{
			{[]core.RowWrite{{Key: "b", Cases: room(9)}, {Key: "a", Cases: room(9)}}, want{true, []int{0, 0}, []int64{4, 4}}},
			{[]core.RowWrite{{Key: "a", Cases: room(9)}, {Key: "b", Cases: room(3)}}, want{false, []int{0, -1}, []int64{4, 4}}},
			{[]core.RowWrite{{Key: "a", Cases: room(9)}, {Key: "b", Cases: room(3), Optional: true}}, want{true, []int{0, -1}, []int64{5, 4}}},
			{[]core.RowWrite{{Key: "a", Cases: room(9)}, {Key: "missing", Cases: room(9), Optional: true}}, want{false, []int{0, -1}, []int64{5, 4}}},
		} {
			ok, err := e.db.IncrementAll(e.ctx, core.ModelRateLimit, "key", c.writes)
			if e.b.dialect != sluicesql.Postgres {
				if !errors.Is(err, driver.ErrNoAll) || ok {
					t.Fatalf("IncrementAll on %s = %v, %v; want driver.ErrNoAll", e.b.name, ok, err)
				}
				return
			}
			if err != nil || ok != c.want.ok {
				t.Fatalf("case %d: IncrementAll = %v, %v; want %v", i, ok, err, c.want.ok)
			}
			if i == 0 {
				twice := []core.RowWrite{{Key: "a", Cases: room(9)}, {Key: "b", Cases: room(9)}, {Key: "a", Cases: room(9)}}
				if ok, err := e.db.IncrementAll(e.ctx, core.ModelRateLimit, "key", twice); ok || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "written twice") {
					t.Fatalf("a key written twice: IncrementAll = %v, %v; want core.ErrInvalid naming it", ok, err)
				}
			}
			for j, w := range c.writes {
				if w.Case != c.want.cases[j] {
					t.Errorf("case %d: write %d (%s) reports case %d, want %d", i, j, w.Key, w.Case, c.want.cases[j])
				}
				if w.Key == "missing" && w.Row != nil {
					t.Errorf("case %d: a missing row reported as %v", i, w.Row)
				}
			}
			if got := counts(); got[0] != c.want.counts[0] || got[1] != c.want.counts[1] {
				t.Errorf("case %d: counts %v after, want %v", i, got, c.want.counts)
			}
		}
		// A window that is over takes the second case, on the row as stored.
		if _, err := e.db.UpdateMany(e.ctx, core.ModelRateLimit, []core.Where{core.Eq("key", "a")}, map[string]any{"lastRequest": int64(10)}); err != nil {
			t.Fatal(err)
		}
		w := []core.RowWrite{{Key: "a", Cases: room(9)}, {Key: "b", Cases: room(9)}}
		ok, err := e.db.IncrementAll(e.ctx, core.ModelRateLimit, "key", w)
		if err != nil || !ok || w[0].Case != 1 || w[1].Case != 0 || w[0].Row.Int("count") != 5 || w[0].Row.Int("lastRequest") != 10 {
			t.Fatalf("over window: ok %v, %v, cases %d %d, row a as locked %v", ok, err, w[0].Case, w[1].Case, w[0].Row)
		}
		if got := counts(); got[0] != 1 || got[1] != 5 {
			t.Errorf("over window: counts %v, want [1 5]", got)
		}
	})
}
