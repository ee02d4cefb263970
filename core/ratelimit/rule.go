package ratelimit

import (
	"fmt"
	"math"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Rule allows at most Max units per Window for one key, or, with Calendar
// set, per calendar day, week, month or year in Location.
type Rule struct {
	// Window is the length of a window: positive, a whole number of
	// milliseconds (windows are stored in epoch milliseconds). It must be
	// 0 when Calendar is set: the period is the window.
	Window time.Duration
	// Max is how many units a window admits. 0 denies every request.
	Max int64
	// Name names the rule in a [Policy], in its storage keys, in the
	// decision's [RuleDecision] and in response headers: 1 to
	// [MaxRuleNameLength] ASCII letters, digits, '-', '_' or '.'. "" reads
	// as "default" for a lone rule; a policy's rules need names.
	Name string
	// Shadow makes the rule count requests and report a denial as
	// [Decision.WouldDeny] without ever denying one: a shadow rule counts
	// while it admits, and what it would deny is admitted uncounted by it.
	// Roll a new limit out in shadow mode, watch its would-deny outcomes
	// (the observer's "shadow", headers), then turn Shadow off.
	Shadow bool
	// Calendar, when set, counts in calendar periods (see "Calendar
	// windows" in the package documentation) instead of windows of
	// Window: [Day], [Week] (from Monday), [Month] or [Year], aligned to
	// local midnight in Location. Only [FixedWindow] serves it.
	Calendar Calendar
	// Location is the time zone of a calendar rule's periods; nil reads
	// as UTC. It is ignored without Calendar.
	Location *time.Location
}

// Unlimited is the rule that exempts a request from middleware (sluicehttp,
// sluicegrpc): it lets the request through without asking the limiter.
// [Limiter.Consume] refuses it like any other invalid rule;
// [Limiter.CheckRule] accepts it.
var Unlimited = Rule{Max: -1}

// Validate reports what is wrong with the rule, wrapping core.ErrInvalid.
// A limiter also refuses, the same way, what its mode cannot compute
// exactly: under SlidingWindow a Window longer than half the longest
// time.Duration, under GCRA a Max × ⌈Window/Max⌉ ms longer than the
// longest time.Duration (so at most about 9.2×10¹² units per window).
func (r Rule) Validate() error {
	if p := r.problem(); p != "" {
		return invalidf("%s", p)
	}
	return nil
}

// problem says what is wrong with the rule, or "".
func (r *Rule) problem() string {
	switch {
	case r.Calendar != 0:
		if p := r.calendarProblem(); p != "" {
			return p
		}
	case r.Window <= 0:
		return fmt.Sprintf("rule window %v must be positive", r.Window)
	case r.Window%time.Millisecond != 0:
		return fmt.Sprintf("rule window %v is not a whole number of milliseconds", r.Window)
	case r.Max < 0:
		return fmt.Sprintf("rule max %d must not be negative", r.Max)
	}
	return nameProblem(r.Name)
}

// Decision is the answer to one request.
type Decision struct {
	// Allowed reports whether the request was admitted (and counted).
	Allowed bool
	// Limit is the rule's Max.
	Limit int64
	// Remaining is how many units the current window still admits.
	Remaining int64
	// Reset is when the current window ends: the instant a full key is
	// admitted again. For a key with no live window it is now + Window.
	Reset time.Time
	// RetryAfter is how long a denied request should wait: Reset − now.
	// It is 0 when the request was allowed.
	RetryAfter time.Duration
	// DeniedBy names the policy's rule that denied the request, the
	// binding rule below ([Rule.Name]): "" when the request was allowed,
	// and for a lone rule's decision.
	DeniedBy string
	// WouldDeny reports that a shadow rule ([Rule.Shadow]) would have
	// denied the request: Allowed stays true.
	WouldDeny bool
	// Rules holds one decision per rule of a [Policy], in the policy's
	// order; nil for a lone rule (see [Decision.PerRule]). The fields above
	// then report the binding rule: when denied, the denying non-shadow
	// rule with the longest RetryAfter; otherwise the rule with the fewest
	// Remaining (the first of them, on a tie).
	Rules []RuleDecision
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("ratelimit: %w: "+format, append([]any{core.ErrInvalid}, args...)...)
}

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
func (r *Rule) modeProblem(m Mode) string {
	if r.Calendar != 0 {
		return calendarModeProblem(m)
	}
	switch m {
	case SlidingWindow:
		if r.Window.Milliseconds() > maxSpan/2 {
			return fmt.Sprintf("rule window %v is longer than SlidingWindow computes exactly: a counter lasts two windows, "+
				"and two must fit in a time.Duration (at most %v)", r.Window, time.Duration(maxSpan/2)*time.Millisecond)
		}
	case GCRA:
		if _, ok := gcraBurst(*r); !ok {
			return fmt.Sprintf("rule max %d over window %v is more than GCRA computes exactly: a full bucket holds Max × ⌈Window/Max⌉ ms "+
				"of emission time, which must fit in a time.Duration (at most %d ms)", r.Max, r.Window, maxSpan)
		}
	}
	return ""
}

// longest is the longest window the rule counts in: its Window, or the
// longest period of its Calendar.
func (r Rule) longest() time.Duration {
	if r.Calendar != 0 {
		return r.Calendar.Longest()
	}
	return r.Window
}

// frame is where a request at now counts, in the terms of a fixed window's
// counter (a count and the window's start, epoch ms):
//   - a stored start at or before after is a window that is over;
//   - open is the start a new window gets, w its length: it ends at open + w.
//
// For a window of the rule's Window, a start more than Window ago is
// over and a new window opens at now. For a calendar rule, a start before
// the current period's is over and a new window opens at the period's
// start, lasting until the next period's.
type frame struct{ after, open, w int64 }

// frame returns the rule's frame at now.
func (r Rule) frame(now int64) frame {
	if r.Calendar == 0 {
		w := r.Window.Milliseconds()
		return frame{after: now - w, open: now, w: w}
	}
	start, end := r.Calendar.period(now, r.location())
	return frame{after: start - 1, open: start, w: end - start}
}

// end is the end of the window that opens in f.
func (f frame) end() int64 { return f.open + f.w }
