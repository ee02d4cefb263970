// Package testrace holds the one starting gate core's race tests share, so
// that no test file writes its own. Tests outside core use
// adaptertest.Release, which behaves the same.
package testrace

import "sync"

// Release starts n goroutines, holds them at a gate until every one is
// running, then lets them all go at once and waits for them to finish.
// fn(i) runs in goroutine i. Releasing them together, rather than as they
// are started, is what lets a race test make them collide.
func Release(n int, fn func(i int)) {
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-gate
			fn(i)
		}()
	}
	ready.Wait()
	close(gate)
	done.Wait()
}
