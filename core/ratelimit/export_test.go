package ratelimit

import "time"

// SetTicker replaces the pruning ticker, so tests tick by hand.
func SetTicker(l *Limiter, tick <-chan time.Time) {
	l.newTicker = func(time.Duration) (<-chan time.Time, func()) { return tick, func() {} }
}

// DenialCacheLen returns how many denials l remembers.
func DenialCacheLen(l *Limiter) int { return l.denials.len() }

// MemoryLen returns how many counters a Memory storage holds.
func MemoryLen(s Storage) int { return s.(*memStorage).len() }
