package ratelimit

// This file is the fixed window and Better Auth's window (see "Windows"
// in the package documentation) as arithmetic over a key's counter: a
// window opens at a key's first request and lasts the rule's Window; an
// elapsed time of exactly Window belongs to the next window. Memory
// applies it under a lock; the database storage applies it as the guards
// of its writes (database.go).

// windowed decides a request of cost (1 ≤ cost ≤ rule.Max) on c (exists
// false: none stored) at now: it returns the counter after the request
// and the state to report, and c itself for a denial. Under Better Auth's
// window (better) an admission moves the window's start to now.
func windowed(c counter, exists bool, rule Rule, cost, now int64, better bool) (counter, state) {
	w := rule.Window.Milliseconds()
	switch {
	case !exists || now-c.last >= w:
		return counter{count: cost, last: now, span: w}, state{allowed: true, count: cost, reset: now + w}
	case c.count > rule.Max-cost:
		return c, state{count: c.count, reset: c.last + w}
	}
	c.count += cost
	c.span = w
	if better {
		c.last = now
	}
	return c, state{allowed: true, count: c.count, reset: c.last + w}
}

// peekState judges a counter read without writing it.
func peekState(exists bool, count, last int64, rule Rule, now int64) state {
	w := rule.Window.Milliseconds()
	if !exists || now-last >= w {
		return state{allowed: rule.Max > 0, reset: now + w}
	}
	return state{allowed: count < rule.Max, count: count, reset: last + w}
}
