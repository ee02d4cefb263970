package adaptertest

import (
	"math"
	"math/big"
	"time"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// rlModel is the documented decision of one rate-limit mode on one key
// (see the ratelimit package documentation), computed in big integers so
// that nothing it says can overflow: the storages' int64 arithmetic, SQL
// and scripts are checked against it at the edges of what validation
// accepts. Times are epoch milliseconds.
type rlModel struct {
	mode ratelimit.Mode
	w    *big.Int // the window, ms
	max  *big.Int

	// Fixed and Better Auth windows: the key's window, when it has one.
	exists      bool
	count, last *big.Int
	// SlidingWindow: each window's count, by window number.
	windows map[string]*big.Int
	// GCRA: the theoretical arrival time, nil for a key never admitted.
	tat *big.Int
}

// rlWant is what the model says a decision is.
type rlWant struct {
	invalid          bool // refused with core.ErrInvalid, nothing written
	allowed          bool
	remaining, reset *big.Int // Remaining, and Reset in epoch ms
	retry            *big.Int // RetryAfter in ms
}

// edgeMaxSpan is the longest time.Duration in whole milliseconds.
const edgeMaxSpan = math.MaxInt64 / int64(time.Millisecond)

func bi(v int64) *big.Int { return big.NewInt(v) }

func add(a, b *big.Int) *big.Int { return new(big.Int).Add(a, b) }
func sub(a, b *big.Int) *big.Int { return new(big.Int).Sub(a, b) }
func mul(a, b *big.Int) *big.Int { return new(big.Int).Mul(a, b) }

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b *big.Int) *big.Int {
	q, m := new(big.Int).DivMod(a, b, new(big.Int)) // Euclidean: m ≥ 0
	_ = m
	return q
}

// ceilDiv is ⌈a/b⌉ for b > 0.
func ceilDiv(a, b *big.Int) *big.Int {
	return new(big.Int).Neg(floorDiv(new(big.Int).Neg(a), b))
}

func bigMax(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

func bigMin(a, b *big.Int) *big.Int {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

func newRLModel(mode ratelimit.Mode, rule ratelimit.Rule) *rlModel {
	return &rlModel{mode: mode, w: bi(rule.Window.Milliseconds()), max: bi(rule.Max), windows: map[string]*big.Int{}}
}

// clone copies the model, so that a decision the storage refused can be
// undone.
func (m *rlModel) clone() *rlModel {
	c := *m
	c.windows = make(map[string]*big.Int, len(m.windows))
	for k, v := range m.windows {
		c.windows[k] = v
	}
	return &c
}

// modelInvalid is the model of validation: Rule.Validate, a negative cost,
// and what each mode documents it cannot compute exactly (two windows
// beyond a time.Duration under SlidingWindow, a bucket of Max·T ms beyond
// one under GCRA).
func modelInvalid(mode ratelimit.Mode, rule ratelimit.Rule, cost int64) bool {
	if cost < 0 || rule.Window <= 0 || rule.Window%time.Millisecond != 0 || rule.Max < 0 {
		return true
	}
	w, span := bi(rule.Window.Milliseconds()), bi(edgeMaxSpan)
	switch mode {
	case ratelimit.SlidingWindow:
		return mul(bi(2), w).Cmp(span) > 0
	case ratelimit.GCRA:
		if rule.Max > 0 {
			return mul(bi(rule.Max), ceilDiv(w, bi(rule.Max))).Cmp(span) > 0
		}
	}
	return false
}

// step is the decision on a request of cost at now, and the model's state
// after it.
func (m *rlModel) step(rule ratelimit.Rule, now, cost int64) rlWant {
	if modelInvalid(m.mode, rule, cost) {
		return rlWant{invalid: true}
	}
	n, c := bi(now), bi(cost)
	if m.max.Sign() == 0 { // Max 0 denies without asking the storage
		return rlWant{remaining: bi(0), reset: add(n, m.w), retry: new(big.Int).Set(m.w)}
	}
	check := cost == 0 || c.Cmp(m.max) > 0
	var want rlWant
	switch m.mode {
	case ratelimit.SlidingWindow:
		want = m.sliding(n, c, check)
	case ratelimit.GCRA:
		want = m.gcra(n, c, check)
	default:
		want = m.window(n, c, check)
	}
	if c.Cmp(m.max) > 0 {
		want.allowed = false // a cost above Max never fits
	}
	if want.allowed {
		want.retry = bi(0)
	} else if want.retry == nil {
		want.retry = bigMax(sub(want.reset, n), bi(0))
	}
	return want
}

// remaining is Max − used, not below 0.
func (m *rlModel) remaining(used *big.Int) *big.Int { return bigMax(sub(m.max, used), bi(0)) }

// window is FixedWindow and BetterAuthWindow: a window starts at the
// first request after the last one ended; Better Auth's moves its start to
// every admitted request.
func (m *rlModel) window(n, c *big.Int, check bool) rlWant {
	live := m.exists && sub(n, m.last).Cmp(m.w) < 0
	if check {
		if !live {
			return rlWant{allowed: true, remaining: new(big.Int).Set(m.max), reset: add(n, m.w)}
		}
		return rlWant{allowed: m.count.Cmp(m.max) < 0, remaining: m.remaining(m.count), reset: add(m.last, m.w)}
	}
	switch {
	case !live:
		m.exists, m.count, m.last = true, c, n
	case add(m.count, c).Cmp(m.max) > 0:
		return rlWant{remaining: m.remaining(m.count), reset: add(m.last, m.w)}
	default:
		m.count = add(m.count, c)
		if m.mode == ratelimit.BetterAuthWindow {
			m.last = n
		}
	}
	return rlWant{allowed: true, remaining: m.remaining(m.count), reset: add(m.last, m.w)}
}

// slideAt is the sliding window's view at an instant: window i's start
// and count, the previous window's count and its weight.
type slideAt struct {
	i, start, cur, prev, weighted *big.Int
}

func (m *rlModel) slideAt(t *big.Int) slideAt {
	i := floorDiv(t, m.w)
	start := mul(i, m.w)
	v := slideAt{i: i, start: start, cur: m.windowCount(i), prev: m.windowCount(sub(i, bi(1)))}
	// ⌈prev × (w − elapsed) / w⌉
	v.weighted = ceilDiv(mul(v.prev, sub(m.w, sub(t, start))), m.w)
	return v
}

func (m *rlModel) windowCount(i *big.Int) *big.Int {
	if c, ok := m.windows[i.String()]; ok {
		return c
	}
	return bi(0)
}

// fitsAt reports whether cost fits at t, counting nothing more than the
// model holds.
func (m *rlModel) fitsAt(t, c *big.Int) bool {
	v := m.slideAt(t)
	return add(add(v.cur, c), v.weighted).Cmp(m.max) <= 0
}

// earliest is the first instant from n at which cost fits, found by
// bisection on fitsAt (weights only decay, so fitting is monotone): at
// the latest two windows after the current one starts, when nothing
// counted so far weighs any more.
func (m *rlModel) earliest(n, c *big.Int) *big.Int {
	lo, hi := n, add(m.slideAt(n).start, mul(bi(2), m.w))
	if m.fitsAt(lo, c) {
		return lo
	}
	for sub(hi, lo).Cmp(bi(1)) > 0 { // fitsAt(lo) is false, fitsAt(hi) true
		mid := floorDiv(add(lo, hi), bi(2))
		if m.fitsAt(mid, c) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func (m *rlModel) sliding(n, c *big.Int, check bool) rlWant {
	v := m.slideAt(n)
	used := add(v.cur, v.weighted)
	need := c
	if check {
		need = bi(1)
	}
	if add(used, need).Cmp(m.max) <= 0 {
		if !check {
			m.windows[v.i.String()] = add(v.cur, c)
			used = add(used, c)
		}
		return rlWant{allowed: true, remaining: m.remaining(used), reset: add(v.start, m.w)}
	}
	if used.Cmp(m.max) >= 0 {
		need = bi(1) // full: when one unit fits, which the denial cache keeps to
	}
	return rlWant{remaining: m.remaining(used), reset: m.earliest(n, need)}
}

func (m *rlModel) gcra(n, c *big.Int, check bool) rlWant {
	T := ceilDiv(m.w, m.max)
	burst := mul(m.max, T)
	t0 := n
	if m.tat != nil {
		t0 = bigMax(m.tat, n)
	}
	left := func(tat *big.Int) *big.Int { // ⌊(burst − (tat − now))/T⌋ within [0, Max]
		r := sub(burst, sub(tat, n))
		if r.Sign() < 0 {
			return bi(0)
		}
		return bigMin(floorDiv(r, T), m.max)
	}
	need := c
	if check {
		need = bi(1)
	}
	if sub(add(t0, mul(need, T)), n).Cmp(burst) <= 0 {
		if check {
			return rlWant{allowed: true, remaining: left(t0), reset: t0}
		}
		m.tat = add(t0, mul(c, T))
		return rlWant{allowed: true, remaining: left(m.tat), reset: m.tat}
	}
	want := rlWant{remaining: left(t0), reset: sub(add(t0, T), burst)}
	if !check && c.Cmp(bi(1)) > 0 {
		// A denied cost fits (cost − 1)·T after a cost of 1 does.
		want.reset = add(want.reset, mul(sub(c, bi(1)), T))
		want.retry = bigMax(sub(want.reset, n), bi(0))
	}
	return want
}
