package ratelimit

// Queued returns how many callers wait in l's write combiner for a write.
func Queued(l *Limiter) int {
	l.comb.mu.Lock()
	defer l.comb.mu.Unlock()
	n := 0
	for _, ln := range l.comb.lines {
		n += len(ln.queue)
	}
	return n
}

// BreakCombinedGuard makes l's combined claims guard on count ≤ max − 1
// whatever they claim, the bug of forgetting the claim's size.
func BreakCombinedGuard(l *Limiter) { l.comb.bound = func(max, _ int64) int64 { return max - 1 } }
