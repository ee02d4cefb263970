package sluicehttp

import (
	"fmt"
	"maps"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// paths is a checked path table: exact paths, and patterns in the order
// they are tried.
type paths struct {
	def      ratelimit.Rule
	exact    map[string]ratelimit.Rule
	patterns []pattern
}

type pattern struct {
	glob    string
	literal int // characters other than '*'
	rule    ratelimit.Rule
}

// newPaths checks def and every rule of table against l, and every path.
func newPaths(l *ratelimit.Limiter, def ratelimit.Rule, table map[string]ratelimit.Rule) (paths, error) {
	ps := paths{def: def, exact: map[string]ratelimit.Rule{}}
	if err := l.CheckRule(def); err != nil {
		return ps, invalidIn("RateLimitConfig.Default", err)
	}
	for p, rule := range table {
		if err := l.CheckRule(rule); err != nil {
			return ps, invalidIn(fmt.Sprintf("RateLimitConfig.Paths[%q]", p), err)
		}
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "*") {
			return ps, invalidf("RateLimitConfig.Paths[%q]: a path must start with '/' or '*'", p)
		}
		if strings.Contains(p, "*") {
			ps.patterns = append(ps.patterns, pattern{glob: p, literal: len(p) - strings.Count(p, "*"), rule: rule})
		} else {
			ps.exact[path.Clean(p)] = rule
		}
	}
	sort.Slice(ps.patterns, func(i, j int) bool {
		a, b := ps.patterns[i], ps.patterns[j]
		if a.literal != b.literal {
			return a.literal > b.literal
		}
		return a.glob < b.glob
	})
	return ps, nil
}

// ruleFor picks the request's rule in the order RateLimitConfig documents.
func (m *rateLimit) ruleFor(r *http.Request, p string) ratelimit.Rule {
	if m.cfg.RuleFor != nil {
		if rule, ok := m.cfg.RuleFor(r); ok {
			return rule
		}
	}
	if rule, ok := m.rules.exact[p]; ok {
		return rule
	}
	for _, pt := range m.rules.patterns {
		if globMatch(pt.glob, p) {
			return pt.rule
		}
	}
	return m.rules.def
}

// globMatch reports whether s matches pattern, where '*' matches any run of
// characters (possibly empty) and everything else matches itself.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

// ParseRules reads a path table written as strings, such as a
// configuration file's, into rules for [RateLimitConfig].Paths: each value
// is read by ratelimit.ParseRule ("100-M", "5/30s", "unlimited"), and each
// key is kept as written.
//
//	paths, err := sluicehttp.ParseRules(map[string]string{"/sign-in/*": "3/10s", "/health": "unlimited"})
//
// A value ParseRule refuses is an error wrapping core.ErrInvalid that
// names its key (the first in sorted order); nil or empty gives an empty
// table. The keys are checked by [RateLimit], as every path of Paths is.
func ParseRules(rules map[string]string) (map[string]ratelimit.Rule, error) {
	out := make(map[string]ratelimit.Rule, len(rules))
	for _, p := range slices.Sorted(maps.Keys(rules)) { // the first bad key in order, every time
		r, err := ratelimit.ParseRule(rules[p])
		if err != nil {
			return nil, invalidIn(fmt.Sprintf("ParseRules: [%q]", p), err)
		}
		out[p] = r
	}
	return out, nil
}
