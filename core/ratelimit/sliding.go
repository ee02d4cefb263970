package ratelimit

import (
	"math/bits"
)

// slide is a key's two windows as seen at one instant: the current
// window, which started at start, and the one before it.
type slide struct {
	w, start, elapsed int64 // window length, current window's start, now − start (0 ≤ elapsed < w)
	cur, prev         int64 // counts of the current and the previous window
}

// windowOf returns the number and start of the window holding now: windows
// are aligned to multiples of w since the epoch.
func windowOf(now, w int64) (i, start int64) {
	i = now / w
	if now%w < 0 { // floor, for instants before the epoch
		i--
	}
	return i, i * w
}

func newSlide(now, w int64) slide {
	_, start := windowOf(now, w)
	return slide{w: w, start: start, elapsed: now - start}
}

// mulDiv returns floor(a×b/d) and whether the division left a remainder,
// exactly, for a, b ≥ 0, d > 0 and a result below 2^64.
func mulDiv(a, b, d int64) (uint64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, r := bits.Div64(hi, lo, uint64(d))
	return q, r != 0
}

// weighted is the previous window's count weighted by the part of it the
// last Window still covers, rounded up: ceil(prev × (w − elapsed) / w),
// at most prev, so it never under-counts and never overflows.
func (v slide) weighted() int64 {
	if v.prev <= 0 {
		return 0
	}
	q, rem := mulDiv(v.prev, v.w-v.elapsed, v.w)
	if rem {
		q++
	}
	return int64(q)
}

// used is the current count plus the weighted previous one, saturating.
func (v slide) used() int64 {
	u, wp := v.cur, v.weighted()
	if u > (1<<63-1)-wp {
		return 1<<63 - 1
	}
	return u + wp
}

// bound is the largest current count to which cost can still be added:
// cur + cost + weighted ≤ max ⇔ cur ≤ max − cost − weighted. It is
// negative when nothing fits; 0 ≤ cost ≤ max, so it never overflows.
func (v slide) bound(cost, max int64) int64 { return max - cost - v.weighted() }

// earliest returns the first instant at which a request of cost (1 ≤ cost
// ≤ max) fits, assuming no other request is counted meanwhile: in this
// window, once the previous window's weight has decayed enough, or in the
// next one, where this window's count becomes the previous one.
func (v slide) earliest(cost, max int64) int64 {
	now := v.start + v.elapsed
	if room := max - cost - v.cur; room >= 0 {
		// ceil(prev·(w−e)/w) ≤ room ⇔ prev·(w−e) ≤ room·w
		// ⇔ e ≥ w − floor(room·w/prev).
		if room >= v.prev {
			return now
		}
		q, _ := mulDiv(room, v.w, v.prev) // < w, since room < prev
		if e := v.w - int64(q); e < v.w {
			return v.start + max64(e, v.elapsed)
		}
	}
	// The next window: its previous count is cur, its own count 0.
	room := max - cost
	if room >= v.cur {
		return v.start + v.w
	}
	q, _ := mulDiv(room, v.w, v.cur)
	return v.start + v.w + (v.w - int64(q))
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// admitted is the state after a request of cost is counted, cur being the
// current window's count including it. For SlidingWindow, state.count is
// the current count plus the weighted previous one, so that Remaining is
// what a request could still spend now; state.reset is the end of the
// current fixed window for an admission.
func (v slide) admitted(cur int64) state {
	v.cur = cur
	return state{allowed: true, count: v.used(), reset: v.start + v.w}
}

// denied is the state of a request of cost that does not fit. Its reset is
// the earliest instant it fits; when not even one unit fits (count ≥ max,
// Remaining 0) it is the earliest instant one unit fits, which the denial
// cache then keeps to: no request is admitted before it, and a request of
// cost 1 is admitted at it.
func (v slide) denied(cost, max int64) state {
	used := v.used()
	if used >= max {
		return state{count: used, reset: v.earliest(1, max)}
	}
	return state{count: used, reset: v.earliest(cost, max)}
}

// peeked is the state a check reports: whether a request of cost 1 fits.
func (v slide) peeked(max int64) state {
	if v.bound(1, max) >= v.cur {
		return state{allowed: true, count: v.used(), reset: v.start + v.w}
	}
	return v.denied(1, max)
}

// slid decides a request of cost (1 ≤ cost ≤ rule.Max) on c, a key's
// current window (last its start, count its count) and the previous
// window's count (prev), exists false when none is stored: it returns the
// counter after the request and the state to report, and c for a denial.
func slid(c counter, exists bool, rule Rule, cost, now int64) (counter, state) {
	v := newSlide(now, rule.Window.Milliseconds())
	if exists {
		c.roll(&v)
	}
	if v.cur > v.bound(cost, rule.Max) {
		return c, v.denied(cost, rule.Max)
	}
	return counter{count: v.cur + cost, prev: v.prev, last: v.start, span: 2 * v.w}, v.admitted(v.cur + cost)
}

// slidPeek is the state a check reports on c.
func slidPeek(c counter, exists bool, rule Rule, now int64) state {
	v := newSlide(now, rule.Window.Milliseconds())
	if exists {
		c.roll(&v)
	}
	return v.peeked(rule.Max)
}

// roll reads the counter into v as of v's window. A window the clock has
// stepped back from is decided in the latest window seen, at its start:
// nothing counted is dropped.
func (c counter) roll(v *slide) {
	switch {
	case c.last == v.start:
		v.cur, v.prev = c.count, c.prev
	case c.last == v.start-v.w:
		v.prev = c.count
	case c.last > v.start:
		v.start, v.elapsed, v.cur, v.prev = c.last, 0, c.count, c.prev
	}
}
