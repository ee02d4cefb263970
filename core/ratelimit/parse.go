package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
)

// unitWindows are the units of rules written "100-M", as ulule/limiter
// writes them.
var unitWindows = map[string]time.Duration{"S": time.Second, "M": time.Minute, "H": time.Hour, "D": 24 * time.Hour}

// ParseRule reads a rule written as in a configuration file: "100-M" (100
// per minute; units S, M, H and D), "5/30s" (a Go duration after the
// slash), "1000/day" (a calendar rule: day, week, month or year after the
// slash, in UTC), "1000/day@Europe/Berlin" (in the IANA time zone after
// the @, loaded with time.LoadLocation), or "unlimited". The rule it
// returns is valid (see [Rule.Validate]) or Unlimited; anything else, an
// unknown time zone included, is an error wrapping core.ErrInvalid that
// quotes the input.
func ParseRule(s string) (Rule, error) {
	in := strings.TrimSpace(s)
	if strings.EqualFold(in, "unlimited") {
		return Unlimited, nil
	}
	count, per, unit := in, "", false
	if i := strings.IndexAny(in, "-/"); i >= 0 {
		count, per, unit = in[:i], strings.TrimSpace(in[i+1:]), in[i] == '-'
	}
	count = strings.TrimSpace(count)
	if per == "" || count == "" {
		return Rule{}, invalidf("rule %q: want a count and a window, such as \"100-M\" or \"5/30s\"", s)
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || count[0] == '+' || count[0] == '-' {
		return Rule{}, invalidf("rule %q: count %q is not a whole number of zero or more", s, count)
	}
	if !unit {
		if r, ok, err := parseCalendar(s, n, per); ok || err != nil {
			return r, err
		}
	}
	var w time.Duration
	if unit {
		var ok bool
		if w, ok = unitWindows[strings.ToUpper(per)]; !ok {
			return Rule{}, invalidf("rule %q: unit %q is not one of S, M, H, D", s, per)
		}
	} else if w, err = time.ParseDuration(per); err != nil {
		return Rule{}, invalidf("rule %q: window %q is not a Go duration such as 30s or 1h", s, per)
	}
	r := Rule{Window: w, Max: n}
	if p := r.problem(); p != "" {
		return Rule{}, invalidf("rule %q: %s", s, p)
	}
	return r, nil
}

// String writes the rule as [ParseRule] reads it: "100-M" when the window
// is one unit, "5/30s" otherwise, "unlimited" for [Unlimited], and for a
// calendar rule "1000/day", with "@" and the location's name after it
// unless the location is UTC (or nil): "1000/month@Europe/Berlin".
func (r Rule) String() string {
	if r == Unlimited {
		return "unlimited"
	}
	if r.Calendar != 0 {
		s := strconv.FormatInt(r.Max, 10) + "/" + r.Calendar.String()
		if loc := r.location(); loc != time.UTC {
			s += "@" + loc.String()
		}
		return s
	}
	for u, w := range unitWindows {
		if r.Window == w {
			return strconv.FormatInt(r.Max, 10) + "-" + u
		}
	}
	return strconv.FormatInt(r.Max, 10) + "/" + r.Window.String()
}

// parseCalendar reads a calendar rule's period and time zone after the
// slash ("day", "month@Europe/Berlin"): ok false when per names no
// calendar period.
func parseCalendar(s string, n int64, per string) (Rule, bool, error) {
	name, zone, hasZone := strings.Cut(per, "@")
	name = strings.ToLower(strings.TrimSpace(name))
	var c Calendar
	for i, cn := range calendarNames {
		if cn != "" && cn == name {
			c = Calendar(i)
		}
	}
	if c == 0 {
		if hasZone {
			return Rule{}, false, invalidf("rule %q: %q before the @ is not day, week, month or year", s, name)
		}
		return Rule{}, false, nil
	}
	r := Rule{Max: n, Calendar: c}
	if hasZone {
		zone = strings.TrimSpace(zone)
		if zone == "" {
			return Rule{}, true, invalidf("rule %q: no time zone after the @", s)
		}
		loc, err := time.LoadLocation(zone)
		if err != nil {
			return Rule{}, true, fmt.Errorf("ratelimit: %w: rule %q: unknown time zone %q: %w", core.ErrInvalid, s, zone, err)
		}
		r.Location = loc
	}
	if p := r.problem(); p != "" { // "@Local", say
		return Rule{}, true, invalidf("rule %q: %s", s, p)
	}
	return r, true, nil
}
