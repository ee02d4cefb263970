package gormtest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestConcurrency runs the concurrency-limit cases (core/concurrency on the
// database) on gorm with each backend.
func TestConcurrency(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { adaptertest.RunConcurrency(t, b.maker()) })
	}
}
