package adaptertest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The load of the serializable cases: serialCallers goroutines released at
// once, spread over racePools pools, on one key or one row.
const (
	serialCallers = 128
	serialMax     = 50 // the rate-limit rule's max, and the API key's quota
)

// The sentences of the serializable contract.
const (
	ruleSerialBurst = "with every transaction SERIALIZABLE, 128 concurrent requests over four pools on one fresh key with max 50 " +
		"get no error and admit exactly 50, and the stored count is 50"
	ruleSerialFallback = "with every transaction SERIALIZABLE, 128 concurrent guarded decrements through core's transaction fallback " +
		"over four pools all succeed, with no error, and the stored budget is 0"
	ruleSerialAPIKey = "with every transaction SERIALIZABLE, 128 concurrent verifications over four pools of a key with 50 uses left " +
		"get no error: exactly 50 are valid, the others USAGE_EXCEEDED, and the key stores 0 left"
)

// RunSerializable runs the serializable suite against the adapters
// newHarness makes: bursts of 128 goroutines over four pools, on the
// limiter (each algorithm, and write combining), on core's transaction
// fallback and on API-key verification, each of which must get no error
// at all and exact counts. It is for a database that runs every
// transaction SERIALIZABLE, as CockroachDB and YugabyteDB do, where
// concurrent writers of one row fail with serialization failures (SQLSTATE
// 40001) that the adapter must retry where that is safe.
//
// The harness declares it with Capabilities.Serializable and SeveralPools;
// every case skips otherwise. On PostgreSQL, open the harness's pools on
// [PostgresSerializableDSN]:
//
//	func TestSerializable(t *testing.T) { adaptertest.RunSerializable(t, newSerializableHarness) }
func RunSerializable(t *testing.T, newHarness HarnessMaker) {
	open := func(t *testing.T, needs need) *Fixture {
		t.Helper()
		return newFixture(t, newHarness, needs)
	}
	runCases(t, serializableCases(), open)
}

func serializableCases() []dbCase {
	const on = serializable | severalPools
	return []dbCase{
		{"RateLimitBurst", ruleSerialBurst, on, checked(serialBurst(ratelimit.FixedWindow))},
		{"RateLimitBurstBetterAuthWindow", ruleSerialBurst, on, checked(serialBurst(ratelimit.BetterAuthWindow))},
		{"RateLimitBurstSlidingWindow", ruleSerialBurst, on, checked(serialBurst(ratelimit.SlidingWindow))},
		{"RateLimitBurstGCRA", ruleSerialBurst, on, checked(serialBurst(ratelimit.GCRA))},
		{"RateLimitBurstWriteCombining", ruleSerialBurst, on, checked(serialBurst(ratelimit.FixedWindow, ratelimit.WithWriteCombining()))},
		{"FallbackBurst", ruleSerialFallback, on | viaFallback, checked(serialFallback)},
		{"APIKeyBurst", ruleSerialAPIKey, on, checked(serialAPIKey)},
	}
}

// serialBurst races serialCallers requests of cost 1 on a fresh key.
func serialBurst(mode ratelimit.Mode, opts ...ratelimit.Option) func(context.Context, *Fixture) error {
	return func(ctx context.Context, f *Fixture) error {
		dbs, err := f.DBs(racePools)
		if err != nil {
			return err
		}
		clock := NewClock(time.UnixMilli(rlT0))
		rule := ratelimit.Rule{Window: time.Hour, Max: serialMax}
		var ls []*ratelimit.Limiter
		for _, db := range dbs {
			l, err := ratelimit.New(ratelimit.Database(db), append([]ratelimit.Option{ratelimit.WithClock(clock.Now), ratelimit.WithMode(mode)}, opts...)...)
			if err != nil {
				return err
			}
			ls = append(ls, l)
		}
		var admitted atomic.Int64
		var errs errorList
		Release(serialCallers, func(i int) {
			d, err := ls[i%len(ls)].Consume(ctx, "serial", rule)
			switch {
			case err != nil:
				errs.add(err)
			case d.Allowed:
				admitted.Add(1)
			}
		})
		if err := errs.err(); err != nil {
			return err
		}
		if got := admitted.Load(); got != serialMax {
			return fmt.Errorf("admitted %d of %d, want exactly %d", got, serialCallers, serialMax)
		}
		// A further request on the first pool is denied: the stored state
		// holds the whole budget as spent, whatever the algorithm stores.
		if d, err := ls[0].Consume(ctx, "serial", rule); err != nil || d.Allowed {
			return fmt.Errorf("the request after the burst: allowed %v, %v; want denied", d.Allowed, err)
		}
		return nil
	}
}

// serialFallback races serialCallers guarded decrements through core's
// fallback over several pools, with a budget for every one of them.
func serialFallback(ctx context.Context, f *Fixture) error {
	dbs, err := f.DBs(racePools)
	if err != nil {
		return err
	}
	r, err := f.DB.Create(ctx, counterModel, map[string]any{"name": "serial", "budget": serialCallers})
	if err != nil {
		return err
	}
	req := core.IncrementRequest{Model: counterModel,
		Where:     []core.Where{core.Eq("id", r.Int("id")), core.Gt("budget", 0)},
		Increment: map[string]int64{"budget": -1}}
	var wins atomic.Int64
	var errs errorList
	Release(serialCallers, func(i int) {
		_, ok, err := dbs[i%len(dbs)].IncrementOne(ctx, req)
		switch {
		case err != nil:
			errs.add(err)
		case ok:
			wins.Add(1)
		}
	})
	if err := errs.err(); err != nil {
		return err
	}
	row, _, err := f.DB.FindOne(ctx, counterModel, core.Eq("id", r.Int("id")))
	if err != nil {
		return err
	}
	if wins.Load() != serialCallers || row.Int("budget") != 0 {
		return fmt.Errorf("%d of %d decrements succeeded and the budget is %d, want all of them and 0", wins.Load(), serialCallers, row.Int("budget"))
	}
	return nil
}

// serialAPIKey races serialCallers verifications of a key with serialMax
// uses left.
func serialAPIKey(ctx context.Context, f *Fixture) error {
	r, err := newAPIKeyRound(f)
	if err != nil {
		return err
	}
	plaintext, k, err := r.create(ctx, apikey.CreateParams{Remaining: ptrInt(serialMax), RateLimit: &apikey.RateLimit{}})
	if err != nil {
		return err
	}
	o := r.verifyAll(ctx, plaintext, serialCallers, false, nil)
	if err := o.expect(map[apikey.Code]int{"": serialMax, apikey.CodeUsageExceeded: serialCallers - serialMax}); err != nil {
		return err
	}
	return r.expectStored(ctx, k.ID, 0, 0) // no rate limit: nothing counts requests
}

// PostgresSerializableDSN returns the PostgreSQL DSN from
// SLUICE_POSTGRES_DSN with every session's transactions SERIALIZABLE by
// default (see [SerializableDSN]), or skips the test (fails it when
// CI=true).
func PostgresSerializableDSN(t testing.TB) string {
	t.Helper()
	dsn, err := SerializableDSN(PostgresDSN(t))
	if err != nil {
		t.Fatalf("%s: %v", EnvPostgres, err)
	}
	return dsn
}

// SerializableDSN adds to a PostgreSQL DSN, in URL form
// (postgres://…?…) or keyword form (host=… dbname=…), the startup option
// that makes SERIALIZABLE the default isolation of the sessions opened on
// it (options=-c default_transaction_isolation=serializable): per
// connection, with nothing changed on the server. pgx and lib/pq both
// send it. Options already in the DSN are kept.
func SerializableDSN(dsn string) (string, error) {
	const opt = "-c default_transaction_isolation=serializable"
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("%w: a PostgreSQL DSN that does not parse as a URL: %w", core.ErrInvalid, err)
		}
		q := u.Query()
		q.Set("options", strings.TrimSpace(q.Get("options")+" "+opt))
		// Encode writes a space as '+', which pgx reads as itself: %20
		// is read as a space by every driver (a '+' of a value is %2B).
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return u.String(), nil
	}
	if strings.Contains(dsn, "options=") {
		return "", fmt.Errorf("%w: adaptertest: SerializableDSN: a keyword DSN with options of its own: add %s to them", core.ErrInvalid, opt)
	}
	return strings.TrimSpace(dsn + " options='" + opt + "'"), nil
}

// Serializable returns newHarness's harnesses declaring
// Capabilities.Serializable: the option for a harness whose pools run every
// transaction SERIALIZABLE (on PostgreSQL, opened on
// [PostgresSerializableDSN]), so that [RunSerializable] runs on it.
func Serializable(newHarness HarnessMaker) HarnessMaker {
	return func(ctx context.Context, t *testing.T) (Harness, error) {
		h, err := newHarness(ctx, t)
		if err != nil {
			return nil, err
		}
		return serializableHarness{h}, nil
	}
}

type serializableHarness struct{ Harness }

func (h serializableHarness) Capabilities() Capabilities {
	c := h.Harness.Capabilities()
	c.Serializable = true
	return c
}
