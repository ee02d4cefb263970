package sqltest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestConformance runs sluice's conformance and race suite on database/sql
// with SQLite, and with PostgreSQL and MySQL/MariaDB (clientFoundRows off
// and on) when SLUICE_POSTGRES_DSN and SLUICE_MYSQL_DSN are set.
func TestConformance(t *testing.T) {
	for _, b := range allBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel() // each backend is its own database
			adaptertest.Run(t, b.maker())
		})
	}
}
