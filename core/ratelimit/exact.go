package ratelimit

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// maxSpan is the longest span, in milliseconds, that a Decision can hold:
// its RetryAfter is a time.Duration, about 292 years at most.
const maxSpan = math.MaxInt64 / int64(time.Millisecond)

// modeProblem says what a mode cannot compute exactly with a rule that
// Validate accepts, or "". Fixed and Better Auth windows are exact for
// every valid rule: a count never exceeds Max and a wait never a Window.
// The other two reach further, so they bound the rule:
//   - SlidingWindow counts a window's requests until the end of the next
//     one and a denial may wait into it: up to two windows, which must fit
//     in maxSpan;
//   - GCRA keeps up to Max·T of emission time ahead of now (T = ⌈Window /
//     Max⌉ ms) and a denial may wait all of it: Max·T must fit in maxSpan,
//     which also keeps every tat far below 2^51, where Redis's scripts
//     compute exactly in doubles.
func (r Rule) modeProblem(m Mode) string {
	switch m {
	case SlidingWindow:
		if r.Window.Milliseconds() > maxSpan/2 {
			return fmt.Sprintf("rule window %v is longer than SlidingWindow computes exactly: a counter lasts two windows, "+
				"and two must fit in a time.Duration (at most %v)", r.Window, time.Duration(maxSpan/2)*time.Millisecond)
		}
	case GCRA:
		if _, ok := gcraBurst(r); !ok {
			return fmt.Sprintf("rule max %d over window %v is more than GCRA computes exactly: a full bucket holds Max × ⌈Window/Max⌉ ms "+
				"of emission time, which must fit in a time.Duration (at most %d ms)", r.Max, r.Window, maxSpan)
		}
	}
	return ""
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
