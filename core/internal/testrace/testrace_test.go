package testrace_test

import (
	"sync/atomic"
	"testing"

	"github.com/sluice-go/sluice/core/internal/testrace"
)

// TestReleaseRunsEveryGoroutineOnceTogether: every fn(i) runs exactly once,
// and none runs before all n goroutines have reached the gate.
func TestReleaseRunsEveryGoroutineOnceTogether(t *testing.T) {
	const n = 64
	var seen [n]atomic.Int32
	var started atomic.Int32
	testrace.Release(n, func(i int) {
		started.Add(1)
		seen[i].Add(1)
	})
	if got := started.Load(); got != n {
		t.Fatalf("ran %d goroutines, want %d", got, n)
	}
	for i := range seen {
		if got := seen[i].Load(); got != 1 {
			t.Errorf("fn(%d) ran %d times, want 1", i, got)
		}
	}
}
