package enttest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestSerializable runs the serializable suite on ent over PostgreSQL with
// SERIALIZABLE as every session's default isolation, the stand-in for
// CockroachDB and YugabyteDB.
func TestSerializable(t *testing.T) {
	b := postgresBackend()
	b.name, b.dsn = "postgres-serializable", adaptertest.PostgresSerializableDSN
	adaptertest.RunSerializable(t, adaptertest.Serializable(b.maker()))
}
