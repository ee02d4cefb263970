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

// InSharingCaches is a broken In for the tests that prove In's can fail:
// its view records denials in l's denial cache and remembers window
// starts in l's storage, as a view that kept the limiter's memory would.
func InSharingCaches(l *Limiter, tx any) *Limiter {
	v := l.In(tx)
	if v.txErr == nil {
		v.denials = l.denials
		v.store.(*dbStorage).starts = l.store.(*dbStorage).starts
	}
	return v
}

// DefaultDenialCacheSize is the denial cache's default size.
const DefaultDenialCacheSize = defaultDenialCacheSize

// BreakLeaseGrant makes l's lease refills take every block they ask for,
// granted or not: the bug of a lease that spends what the window had no
// room for.
func BreakLeaseGrant(l *Limiter) { l.leases.granted = func(state) bool { return true } }
