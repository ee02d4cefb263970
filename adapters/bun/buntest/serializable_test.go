package buntest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestSerializable runs the serializable suite on bun over PostgreSQL with
// SERIALIZABLE as every session's default isolation, the stand-in for
// CockroachDB and YugabyteDB.
func TestSerializable(t *testing.T) {
	adaptertest.RunSerializable(t, adaptertest.Serializable(maker(func(t testing.TB) target {
		tg := postgresTarget(t)
		tg.name, tg.dsn = "postgres-serializable", adaptertest.PostgresSerializableDSN(t)
		return tg
	})))
}
