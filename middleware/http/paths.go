package sluicehttp

import (
	"fmt"
	"maps"
	"net/http"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// paths is a checked path table: exact paths, and patterns in the order
// they are tried.
type paths struct {
	def      limit
	exact    map[string]limit
	patterns []pattern
}

type pattern struct {
	glob    string
	literal int // characters other than '*'
	lim     limit
}

// limit is what a request is decided by: a lone rule, or a policy.
type limit struct {
	rule   ratelimit.Rule
	policy ratelimit.Policy // nil: rule alone
}

func (l limit) unlimited() bool { return l.policy == nil && l.rule == ratelimit.Unlimited }

// String names the limit in a stored key: the rule, or the policy's
// rules with their names.
func (l limit) String() string {
	if l.policy == nil {
		return l.rule.String()
	}
	var b strings.Builder
	for i, r := range l.policy {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(r.Name) + "=" + r.String())
	}
	return b.String()
}

// newPaths checks cfg.Default and every rule of cfg.Paths and
// cfg.Policies against cfg.Limiter and cfg.Headers, and every path.
func newPaths(cfg *RateLimitConfig) (paths, error) {
	l, style := cfg.Limiter, cfg.Headers
	ps := paths{def: limit{rule: cfg.Default}, exact: map[string]limit{}}
	if err := l.CheckRule(cfg.Default); err != nil {
		return ps, invalidIn("RateLimitConfig.Default", err)
	}
	if err := style.checkRule("RateLimitConfig.Default", cfg.Default); err != nil {
		return ps, err
	}
	add := func(field, p string, lim limit) error {
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "*") {
			return invalidf("RateLimitConfig.%s[%q]: a path must start with '/' or '*'", field, p)
		}
		if strings.Contains(p, "*") {
			ps.patterns = append(ps.patterns, pattern{glob: p, literal: len(p) - strings.Count(p, "*"), lim: lim})
		} else {
			ps.exact[path.Clean(p)] = lim
		}
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(cfg.Paths)) { // the first bad path in order, every time
		where := fmt.Sprintf("RateLimitConfig.Paths[%q]", p)
		if err := l.CheckRule(cfg.Paths[p]); err != nil {
			return ps, invalidIn(where, err)
		}
		if err := style.checkRule(where, cfg.Paths[p]); err != nil {
			return ps, err
		}
		if err := add("Paths", p, limit{rule: cfg.Paths[p]}); err != nil {
			return ps, err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(cfg.Policies)) {
		where := fmt.Sprintf("RateLimitConfig.Policies[%q]", p)
		if _, dup := cfg.Paths[p]; dup {
			return ps, invalidf("%s: the path is in Paths too: give it a rule or a policy", where)
		}
		pol := slices.Clone(cfg.Policies[p]) // the caller may reuse its slice
		if err := checkPolicy(l, style, where, pol); err != nil {
			return ps, err
		}
		if err := add("Policies", p, limit{policy: pol}); err != nil {
			return ps, err
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

// checkPolicy checks pol against l, as ConsumePolicy would
// (Limiter.CheckPolicyRules), and each of its rules against style.
func checkPolicy(l *ratelimit.Limiter, style HeaderStyle, where string, pol ratelimit.Policy) error {
	if err := l.CheckPolicyRules(pol); err != nil {
		return invalidIn(where, err)
	}
	for i, r := range pol {
		if err := style.checkRule(fmt.Sprintf("%s[%d]", where, i), r); err != nil {
			return err
		}
	}
	return nil
}

// limitFor picks the request's rule or policy in the order
// RateLimitConfig documents.
func (m *rateLimit) limitFor(r *http.Request, p string) limit {
	if m.cfg.RuleFor != nil {
		if rule, ok := m.cfg.RuleFor(r); ok {
			return limit{rule: rule}
		}
	}
	if lim, ok := m.rules.exact[p]; ok {
		return lim
	}
	for _, pt := range m.rules.patterns {
		if globMatch(pt.glob, p) {
			return pt.lim
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
