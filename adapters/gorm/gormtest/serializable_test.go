package gormtest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/gen"
)

// TestSerializable runs the serializable suite on gorm over PostgreSQL
// with SERIALIZABLE as every session's default isolation, the stand-in for
// CockroachDB and YugabyteDB.
func TestSerializable(t *testing.T) {
	b := backend{"PostgreSQLSerializable", gen.Postgres, adaptertest.PostgresSerializableDSN}
	adaptertest.RunSerializable(t, adaptertest.Serializable(b.maker()))
}
