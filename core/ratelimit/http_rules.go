package ratelimit

import (
	"maps"
	"slices"
)

// ParseRules reads a path table written as strings, such as a
// configuration file's, into rules for [HTTPConfig].Paths: each value is
// read by [ParseRule] ("100-M", "5/30s", "unlimited"), and each key is
// kept as written.
//
//	paths, err := ratelimit.ParseRules(map[string]string{"/sign-in/*": "3/10s", "/health": "unlimited"})
//
// A value ParseRule refuses is an error wrapping core.ErrInvalid that
// names its key (the first in sorted order); nil or empty gives an empty table. The keys are checked
// by [Middleware], as every path of Paths is.
func ParseRules(rules map[string]string) (map[string]Rule, error) {
	out := make(map[string]Rule, len(rules))
	for _, p := range slices.Sorted(maps.Keys(rules)) { // the first bad key in order, every time
		r, err := ParseRule(rules[p])
		if err != nil {
			return nil, invalidf("ParseRules: [%q]: %s", p, reason(err))
		}
		out[p] = r
	}
	return out, nil
}
