package ratelimit

import (
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Rule allows at most Max units per Window for one key.
type Rule struct {
	// Window is the length of a window: positive, a whole number of
	// milliseconds (windows are stored in epoch milliseconds).
	Window time.Duration
	// Max is how many units a window admits. 0 denies every request.
	Max int64
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
func (r Rule) problem() string {
	switch {
	case r.Window <= 0:
		return fmt.Sprintf("rule window %v must be positive", r.Window)
	case r.Window%time.Millisecond != 0:
		return fmt.Sprintf("rule window %v is not a whole number of milliseconds", r.Window)
	case r.Max < 0:
		return fmt.Sprintf("rule max %d must not be negative", r.Max)
	}
	return ""
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
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("ratelimit: %w: "+format, append([]any{core.ErrInvalid}, args...)...)
}
