package pgxtest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestConcurrency runs the concurrency-limit cases (core/concurrency on the
// database) on PostgreSQL through pgx, every peer on a pgxpool of its own.
func TestConcurrency(t *testing.T) { adaptertest.RunConcurrency(t, maker) }
