package enttest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestConformance runs sluice's conformance and race suite on SQLite, and on
// PostgreSQL and MySQL/MariaDB (with clientFoundRows off and on) when their
// DSNs are set (SLUICE_POSTGRES_DSN, SLUICE_MYSQL_DSN).
func TestConformance(t *testing.T) {
	for _, b := range allBackends() {
		t.Run(b.name, func(t *testing.T) {
			// Each backend is its own database: running them side by side
			// keeps the suite under go test's default timeout with -race,
			// where the pure-Go SQLite alone takes minutes.
			t.Parallel()
			adaptertest.Run(t, b.maker())
		})
	}
}
