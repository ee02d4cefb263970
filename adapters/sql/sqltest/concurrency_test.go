package sqltest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestConcurrency runs the concurrency-limit cases (core/concurrency on the
// database) on database/sql with SQLite, PostgreSQL and MySQL/MariaDB.
func TestConcurrency(t *testing.T) {
	for _, b := range allBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel() // each backend is its own database
			adaptertest.RunConcurrency(t, b.maker())
		})
	}
}
