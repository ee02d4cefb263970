package buntest_test

import (
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
)

// TestConcurrency runs the concurrency-limit cases (core/concurrency on the
// database) on bun with each target.
func TestConcurrency(t *testing.T) {
	for _, tc := range targets {
		t.Run(tc.name, func(t *testing.T) { adaptertest.RunConcurrency(t, maker(tc.tg)) })
	}
}
