package ratelimit

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
	// as UTC. It is ignored without Calendar. time.Local, each machine's
	// own zone, is refused: every process must count the same days.
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
	if r.Name == "" { // a lone rule's usual name, valid
		return ""
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
	// FixedWindow and BetterAuthWindow bound no rolling rule further: the
	// test is small enough to inline into every decision's validation.
	if r.Calendar == 0 && m != SlidingWindow && m != GCRA {
		return ""
	}
	return r.modeBound(m)
}

// modeBound is modeProblem for a calendar rule, or under SlidingWindow or
// GCRA.
func (r *Rule) modeBound(m Mode) string {
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
		return r.Calendar.longestIn(r.Location)
	}
	return r.Window
}

// frame is where a request at now counts, in the terms of a fixed window's
// counter (a count and the window's start, epoch ms):
//   - a stored start at or before after is a window that is over;
//   - open is the start a new window gets, w its length: it ends at open + w;
//   - a stored start at or after next is a later window (see later).
//
// For a window of the rule's Window, a start more than Window ago is
// over and a new window opens at now. For a calendar rule, a start before
// the current period's is over and a new window opens at the period's
// start, lasting until the next period's.
type frame struct{ after, open, w, next int64 }

// frame returns the rule's frame at now.
func (r *Rule) frame(now int64) frame {
	if r.Calendar != 0 {
		return r.calendarFrame(now)
	}
	w := r.Window.Milliseconds()
	return frame{after: now - w, open: now, w: w, next: math.MaxInt64}
}

// calendarFrame is frame for a calendar rule, out of line so that a
// rolling rule's frame inlines into every decision.
func (r *Rule) calendarFrame(now int64) frame {
	start, end := r.Calendar.period(now, r.location())
	return frame{after: start - 1, open: start, w: end - start, next: end}
}

// end is the end of the window that opens in f.
func (f frame) end() int64 { return f.open + f.w }

// later reports a stored start of a calendar period after the one the
// request counts in: a process whose clock is ahead opened the next
// period in the key's row while this reading is in the last moments of
// the period before. The row holds that period now, and the count of the
// request's own period is gone with it, so the request is denied: counted
// in the next period, it would be admitted past its own period's Max.
// A rolling rule's windows are the row's own (a window opens at its
// key's first request), so no stored start is later than one it counts
// in: a start ahead of this clock is another process's skew.
func (f frame) later(start int64) bool { return start >= f.next }

// live appends to w the guards on lastRequest of a write in the window
// live in f: a start after after and, for a calendar rule, before the
// next period's.
func (f frame) live(w []core.Where) []core.Where {
	w = append(w, core.Gt("lastRequest", f.after))
	if f.next != math.MaxInt64 {
		w = append(w, core.Lt("lastRequest", f.next))
	}
	return w
}

// nameProblem says what is wrong with a rule's name, or "".
func nameProblem(name string) string {
	if len(name) > MaxRuleNameLength {
		return fmt.Sprintf("rule name of %d bytes is longer than %d", len(name), MaxRuleNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Sprintf("rule name %q holds %q: a name is ASCII letters, digits, '-', '_' and '.'", name, c)
		}
	}
	return ""
}

// checkKey refuses, before any I/O, a key that some storage cannot hold:
// PostgreSQL refuses invalid UTF-8 and NUL in text, MariaDB refuses invalid
// UTF-8 under utf8mb4. The same rule holds for every storage, so a key
// that works in memory works in the database too.
func checkKey(key string) error {
	if key != "" && plainASCII(key) {
		return nil
	}
	switch {
	case key == "":
		return invalidf("empty key")
	case !utf8.ValidString(key):
		return invalidf("the key is not valid UTF-8, which a database cannot store: build keys from untrusted input with SafeKey")
	case strings.IndexByte(key, 0) >= 0:
		return invalidf("the key contains a NUL byte, which a database cannot store: build keys from untrusted input with SafeKey")
	}
	return nil
}

// plainASCII reports whether key is ASCII without NUL, the common case,
// eight bytes at a time: one pass in place of the two (a UTF-8 check, then
// a search for NUL) that checkKey makes otherwise, the larger part of a
// Memory decision's validation. A key of 4 to 7 bytes, the shortest usual
// ones, is read as two overlapping words of four, and the tail of a longer
// one as the last eight bytes, rather than byte by byte.
func plainASCII(key string) bool {
	n := len(key)
	switch {
	case n >= 8:
		i := 0
		for ; i+8 <= n; i += 8 {
			if !plain8(word8(key, i)) {
				return false
			}
		}
		return i == n || plain8(word8(key, n-8))
	case n >= 4:
		return plain8(word4(key, 0) | word4(key, n-4)<<32)
	}
	for i := 0; i < n; i++ {
		if c := key[i]; c == 0 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// plain8 reports whether none of x's eight bytes is 0 or ≥ 0x80:
// (x − 0x01…) & ^x has the high bit of the lowest zero byte set.
func plain8(x uint64) bool {
	const lows, highs = 0x0101010101010101, 0x8080808080808080
	return x&highs == 0 && (x-lows)&^x&highs == 0
}

// word8 and word4 read key's bytes from i as a little-endian word, which
// the compiler turns into one load.
func word8(key string, i int) uint64 {
	return uint64(key[i]) | uint64(key[i+1])<<8 | uint64(key[i+2])<<16 | uint64(key[i+3])<<24 |
		uint64(key[i+4])<<32 | uint64(key[i+5])<<40 | uint64(key[i+6])<<48 | uint64(key[i+7])<<56
}

func word4(key string, i int) uint64 {
	return uint64(key[i]) | uint64(key[i+1])<<8 | uint64(key[i+2])<<16 | uint64(key[i+3])<<24
}

// A limiter's bounds and defaults, and how it names what it stores.
const (
	// MaxKeyLength is the longest key [SafeKey] returns, in bytes: the
	// default key column holds 255 characters, and a character is at
	// least a byte.
	MaxKeyLength = 255
	// SecondaryPrefix is put before every key a limiter stores in a
	// secondary storage.
	SecondaryPrefix = "ratelimit:"
	// SlidingSeparator joins a key and a window number in the names of the
	// counters [SlidingWindow] keeps in database and secondary storage: the
	// counter of window i (the window starting at i×Window epoch milliseconds)
	// of key k is named k + "#" + i in decimal, so a key has one counter per
	// window. No key [SafeKey] returns ends with "#" and digits only, so these
	// names never meet a fixed-window key made by SafeKey. A key too long for
	// the key column with the suffix is stored by its digest instead (see
	// [Limiter.ConsumeN]).
	SlidingSeparator = "#"
	// MaxRuleNameLength is the longest [Rule.Name], in bytes.
	MaxRuleNameLength = 64
	// PolicySeparator joins a key and a rule's name in the storage key of a
	// policy's rule: rule n of a policy on key k counts under "{" + k + "}" +
	// PolicySeparator + n. No key [SafeKey] returns holds "#:", so these
	// names never meet a lone rule's key or a sliding window's counter, nor
	// two policies' rules each other's; the braces are a Redis Cluster hash
	// tag, which keeps one policy's counters in one slot. A name longer than
	// [MaxKeyLength] bytes is made with k replaced by its first characters,
	// "#=" and its SHA-256 in unpadded base64url; a k holding '}', which
	// would end the hash tag early or leave it empty, by "#=" and its SHA-256
	// alone.
	PolicySeparator = "#:"
	// DefaultLeaseTime is how long a lease may sit unused before
	// [Limiter.Prune] returns its rest (see [WithLeaseTime]).
	DefaultLeaseTime = time.Second
)

// SafeKey turns any string, such as one built from a request's path or
// headers, into a key every storage can hold, without letting two distinct
// strings share a key (up to SHA-256 collisions).
//
// Valid UTF-8 other than control characters, '%' and '#' is kept as it is;
// those, and every byte of invalid UTF-8, are written as %XX, so the
// result is valid UTF-8 without NUL and decodes back to s. A result longer
// than [MaxKeyLength] bytes keeps its first bytes and ends with '#' and the
// SHA-256 of the whole in unpadded base64url: no short result holds a '#'.
func SafeKey(s string) string {
	if plain(s) && len(s) <= MaxKeyLength {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || r == '%' || r == '#' || unicode.IsControl(r) {
			for _, c := range []byte(s[i : i+n]) {
				const hex = "0123456789ABCDEF"
				b.WriteByte('%')
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xF])
			}
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	k := b.String()
	if len(k) <= MaxKeyLength {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	tail := "#" + base64.RawURLEncoding.EncodeToString(sum[:])
	head := k[:MaxKeyLength-len(tail)]
	for !utf8.ValidString(head) { // do not cut a character in two
		head = head[:len(head)-1]
	}
	return head + tail
}

// plain reports whether SafeKey keeps every character of s: the common
// case, checked without allocating.
func plain(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r == '%' || r == '#' || unicode.IsControl(r) {
			return false
		}
	}
	return true
}
