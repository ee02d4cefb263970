package ratelimit

import (
	"math/bits"
	"time"
)

// This file is the GCRA mode (see "GCRA" in the package documentation):
// one theoretical arrival time (tat, epoch ms) per key. A request of cost c
// is admitted iff max(tat, now) + c·T − now ≤ Max·T, and then
// tat := max(tat, now) + c·T, where T = ⌈Window/Max⌉ ms.
//
// The storages report a GCRA decision as a state, in the terms decide
// turns into a Decision:
//   - count is Max − Remaining, Remaining = ⌊(Max·T − (tat − now))/T⌋
//     (tat after the request when it was admitted, as it stands otherwise);
//   - reset is, for an admitted request or an allowed check, tat: the
//     instant the bucket is full again; for a denial, the instant a
//     request of cost 1 fits, tat + T − Max·T. A denial thus has count ≥
//     Max exactly when reset > now, and the denial cache, which keeps a key
//     whose count is at Max until reset, is exact. A denied request of
//     cost c fits (c − 1)·T later: gcraRetry moves its Reset and
//     RetryAfter there.

// gcraInterval is the emission interval T in milliseconds: Window/Max
// rounded up, so that the rate never exceeds Max per Window; at least 1
// for any Max (the quotient and remainder never overflow, as w + Max − 1
// would). A rule of Max 0 gets the whole window.
func gcraInterval(rule Rule) int64 {
	w := rule.Window.Milliseconds()
	if rule.Max <= 0 {
		return w
	}
	t := w / rule.Max
	if w%rule.Max != 0 {
		t++
	}
	return t
}

// gcraState reports tat (the key's, not below now) to decide: admitted
// with tat the new one, or denied with tat as stored.
func gcraState(rule Rule, t, tat, now int64, allowed bool) state {
	tat = max(tat, now)
	burst := rule.Max * t
	remaining := min(max((burst-(tat-now))/t, 0), rule.Max)
	st := state{allowed: allowed, count: rule.Max - remaining, reset: tat}
	if !allowed {
		st.reset = tat + t - burst
	}
	return st
}

// gcraPeek judges a stored tat for a check: allowed when a request of
// cost 1 fits.
func gcraPeek(rule Rule, t, tat, now int64) state {
	tat = max(tat, now)
	return gcraState(rule, t, tat, now, tat+t-now <= rule.Max*t)
}

// gcraRetry moves a GCRA denial of cost c > 1 to the instant that cost
// fits, (c − 1)·T after the one a request of cost 1 fits, which is what
// the state (and the denial cache) holds. A cost above Max never fits and
// keeps the state's Reset. decide calls it for a denial only.
func (l *Limiter) gcraRetry(d *Decision, rule *Rule, now, cost int64) {
	if l.mode != GCRA || cost <= 1 || cost > rule.Max {
		return
	}
	l.gcraRetryLater(d, *rule, now, cost)
}

// gcraRetryLater is gcraRetry once it applies: out of line, so that the
// test above inlines into every denial.
func (l *Limiter) gcraRetryLater(d *Decision, rule Rule, now, cost int64) {
	at := d.Reset.UnixMilli() + (cost-1)*gcraInterval(rule)
	d.Reset = time.UnixMilli(at).UTC()
	d.RetryAfter = time.Duration(max(at-now, 0)) * time.Millisecond
}

// gcraCounter decides a request of cost (1 ≤ cost ≤ rule.Max) on c, whose
// last is the key's tat (exists false: none stored, an empty bucket): it
// returns the counter after the request and the state to report, and c
// for a denial.
func gcraCounter(c counter, exists bool, rule Rule, cost, now int64) (counter, state) {
	t := gcraInterval(rule)
	tat := now
	if exists {
		tat = max(c.last, now)
	}
	if tat+cost*t-now > rule.Max*t {
		return c, gcraState(rule, t, tat, now, false)
	}
	tat += cost * t
	return counter{last: tat}, gcraState(rule, t, tat, now, true)
}

// gcraBurst is Max·T, the emission time a full GCRA bucket holds, in
// milliseconds, and whether it is at most maxSpan (the product is taken in
// 128 bits, so it never wraps). A rule of Max 0 holds none.
func gcraBurst(r Rule) (int64, bool) {
	if r.Max <= 0 {
		return 0, true
	}
	hi, lo := bits.Mul64(uint64(r.Max), uint64(gcraInterval(r)))
	if hi != 0 || lo > uint64(maxSpan) {
		return 0, false
	}
	return int64(lo), true
}
