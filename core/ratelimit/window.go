package ratelimit

// This file is the fixed window and Better Auth's window (see "Windows"
// in the package documentation) as arithmetic over a key's counter: a
// window opens at a key's first request and lasts the rule's Window; an
// elapsed time of exactly Window belongs to the next window. A calendar
// rule's window is its period instead (see frame in calendar.go). Memory
// applies it under a lock; the database storage applies it as the guards
// of its writes (database.go).

// windowed decides a request of cost (1 ≤ cost ≤ rule.Max) on c (exists
// false: none stored) at now, in place: c becomes the counter after the
// request (unchanged by a denial), and it returns the state to report. Under Better Auth's
// window (better) an admission moves the window's start to now.
func windowed(c *counter, exists bool, rule *Rule, cost, now int64, better bool) state {
	f := rule.frame(now)
	switch {
	case !exists || c.last <= f.after:
		*c = counter{count: cost, last: f.open, span: f.w}
		return state{allowed: true, count: cost, reset: f.end()}
	case f.later(c.last):
		return state{count: rule.Max, reset: f.end()}
	case c.count > rule.Max-cost:
		return state{count: c.count, reset: c.last + f.w}
	}
	c.count += cost
	c.span = f.w
	if better {
		c.last = now
	}
	return state{allowed: true, count: c.count, reset: c.last + f.w}
}

// peekState judges a counter read without writing it.
func peekState(exists bool, count, last int64, rule Rule, now int64) state {
	f := rule.frame(now)
	switch {
	case !exists || last <= f.after:
		return state{allowed: rule.Max > 0, reset: f.end()}
	case f.later(last):
		return state{count: rule.Max, reset: f.end()}
	}
	return state{allowed: count < rule.Max, count: count, reset: last + f.w}
}
