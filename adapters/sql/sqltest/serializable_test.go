package sqltest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
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
