package sqltest_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// TestSerializable runs the serializable suite on database/sql over
// PostgreSQL with SERIALIZABLE as every session's default isolation, the
// stand-in for CockroachDB and YugabyteDB, after checking that the pools
// run at it.
func TestSerializable(t *testing.T) {
	b := postgresBackend()
	b.name, b.dsn = "postgres-serializable", adaptertest.PostgresSerializableDSN
	var level string
	if err := b.open(t, b.dsn(t)).QueryRowContext(t.Context(), "SHOW transaction_isolation").Scan(&level); err != nil {
		t.Fatal(err)
	}
	if level != "serializable" {
		t.Fatalf("the pool runs at %q, not serializable", level)
	}
	adaptertest.RunSerializable(t, adaptertest.Serializable(b.maker()))
}

// TestSerializableCreateOnTakenKeyIsAConflict: at SERIALIZABLE, an insert
// of a key whose row a concurrent transaction updates fails with a
// serialization failure (the row it conflicts with is not in its
// snapshot). The engine answers it at once as the conflict it is, in one
// statement, rather than retry it: on a hot key every retry would meet
// another such update, and a burst of first requests ran out of attempts
// (bench/leases, the limiter at SERIALIZABLE on a hot key).
func TestSerializableCreateOnTakenKeyIsAConflict(t *testing.T) {
	b := postgresBackend()
	b.dsn = adaptertest.PostgresSerializableDSN
	e := newEnv(t, b)
	ctx := t.Context()
	if _, err := e.db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k", "count": 1, "lastRequest": int64(1)}); err != nil {
		t.Fatal(err)
	}
	tb := e.table(t, core.ModelRateLimit)
	col := func(f string) string { c, _ := tb.Column(f); return `"` + c.Name + `"` }
	holder := b.open(t, b.dsn(t))
	defer holder.Close()
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`UPDATE "%s" SET %s = %s + 1 WHERE %s = 'k'`, tb.Name, col("count"), col("count"), col("key"))); err != nil {
		t.Fatal(err)
	}
	type result struct {
		err   error
		trips int64
	}
	done := make(chan result, 1)
	go func() {
		cctx, trips := driver.WithRoundTrips(ctx)
		_, err := e.db.Create(cctx, core.ModelRateLimit, map[string]any{"key": "k", "count": 1, "lastRequest": int64(2)})
		done <- result{err, trips.Count()}
	}()
	// The insert waits for the update's row lock: let the update commit
	// once it does.
	for waiting := 0; waiting == 0; {
		if err := holder.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO "`+tb.Name+`"%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			t.Fatalf("the insert did not wait for the update: %v", r.err)
		case <-time.After(5 * time.Millisecond): // polling the server's view, not a synchronisation
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if !errors.Is(r.err, core.ErrConflict) || r.trips != 1 {
		t.Errorf("Create on a key updated concurrently: %v after %d statements, want core.ErrConflict after 1", r.err, r.trips)
	}
}
