package pgxtest_test

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestSerializable runs the serializable suite on pgx with SERIALIZABLE as
// every session's default isolation, the stand-in for CockroachDB and
// YugabyteDB, after checking that the pools run at it.
func TestSerializable(t *testing.T) {
	dsn := adaptertest.PostgresSerializableDSN(t)
	p, err := openPool(t.Context(), dsn, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var level string
	if err := p.QueryRow(t.Context(), "SHOW transaction_isolation").Scan(&level); err != nil || level != "serializable" {
		t.Fatalf("the pool runs at %q (%v), not serializable", level, err)
	}
	adaptertest.RunSerializable(t, adaptertest.Serializable(func(context.Context, *testing.T) (adaptertest.Harness, error) {
		return &harness{dsn: dsn}, nil
	}))
}
