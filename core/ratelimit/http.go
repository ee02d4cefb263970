package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core/internal/httperr"
)

// HTTPConfig configures [Middleware].
//
// A request's rule is chosen in this order, the first that applies winning:
//  1. RuleFor, when set and it returns true;
//  2. Paths[path], an exact path;
//  3. the matching pattern of Paths (keys containing '*', where '*' matches
//     any run of characters, '/' included) with the most characters other
//     than '*'; a tie goes to the pattern that sorts first;
//  4. Default.
//
// Any of them may be [Unlimited], which lets the request through untouched.
// The path is the request's URL path, cleaned (path.Clean), without its query.
type HTTPConfig struct {
	// Limiter decides the requests. Required.
	Limiter *Limiter
	// Default applies to paths no other rule names. Required: set it to
	// Unlimited to limit only the paths named.
	Default Rule
	// Paths maps exact paths and '*' patterns to rules.
	Paths map[string]Rule
	// RuleFor, when set, is asked first; returning false falls through to
	// Paths and Default.
	RuleFor func(r *http.Request) (Rule, bool)
	// TrustedProxies are the proxies whose X-Forwarded-For is believed.
	// See [ClientKey]. A prefix written as IPv4-mapped IPv6
	// (::ffff:10.0.0.0/104) is taken as its IPv4 prefix (10.0.0.0/8), since
	// client addresses are compared as IPv4.
	TrustedProxies []netip.Prefix
	// OnError, when set, receives the limiter's errors. The response is 503
	// when the limiter fails closed, and the request goes through when it
	// fails open; but when the request's own context is done (the client
	// hung up, or its deadline passed) the handler never runs: the response
	// is 499 (client closed request) after a cancellation, and 503 after a
	// deadline.
	OnError func(r *http.Request, err error)
}

type pattern struct {
	glob    string
	literal int // characters other than '*'
	rule    Rule
}

type middleware struct {
	cfg      HTTPConfig
	exact    map[string]Rule
	patterns []pattern
}

// ErrorBody is the JSON body of the middleware's error responses, the same
// type as apikey.ErrorBody:
//
//	{"code":"RATE_LIMITED","message":"Too many requests. Please try again later.","status":429,"retryAfter":7}
//
// Code is stable, for programs ([CodeRateLimited], [CodeUnavailable]);
// Message is for people; Status repeats the HTTP status; RetryAfter, in
// whole seconds rounded up, equals the Retry-After header and is omitted
// when there is none.
type ErrorBody = httperr.Body

// The codes of the middleware's error responses.
const (
	// CodeRateLimited answers 429: the client's window is full.
	CodeRateLimited = "RATE_LIMITED"
	// CodeUnavailable answers 503: the limiter failed (and fails closed),
	// or the request's deadline passed before it decided.
	CodeUnavailable = "RATE_LIMIT_UNAVAILABLE"
)

// Middleware returns net/http middleware that limits each client (see
// [ClientKey]) per path. The key is [SafeKey] of the client, "|", and the
// cleaned, decoded path: every key is storable, and a path keeps one key
// however the client percent-encodes it ("/l%6Fgin" is "/login").
//
// Every limited response carries RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset (seconds until the window ends, rounded up). A denied
// request gets status 429, Retry-After and X-Retry-After in whole seconds,
// rounded up, and an [ErrorBody] with code [CodeRateLimited]; a failing
// limiter that fails closed answers 503 with [CodeUnavailable] (see
// [HTTPConfig].OnError). apikey's Manager.Middleware answers in the same
// shape.
//
// A bad configuration is an error wrapping [core.ErrInvalid] that names
// the field at fault, such as
//
//	ratelimit: invalid request: Middleware: HTTPConfig.Paths["x"]: a path must start with '/' or '*'
func Middleware(cfg HTTPConfig) (func(http.Handler) http.Handler, error) {
	if cfg.Limiter == nil {
		return nil, invalidf("Middleware: HTTPConfig.Limiter is nil")
	}
	if err := cfg.Limiter.usable(); err != nil {
		return nil, invalidf("Middleware: HTTPConfig.Limiter: %s", reason(err))
	}
	trusted := make([]netip.Prefix, len(cfg.TrustedProxies))
	for i, p := range cfg.TrustedProxies {
		np, err := normalPrefix(p)
		if err != nil {
			return nil, invalidf("Middleware: HTTPConfig.TrustedProxies[%d]: %v", i, err)
		}
		trusted[i] = np
	}
	cfg.TrustedProxies = trusted
	m := &middleware{cfg: cfg, exact: map[string]Rule{}}
	if err := m.checkRule("Default", cfg.Default); err != nil {
		return nil, err
	}
	for p, rule := range cfg.Paths {
		if err := m.checkRule(fmt.Sprintf("Paths[%q]", p), rule); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "*") {
			return nil, invalidf("Middleware: HTTPConfig.Paths[%q]: a path must start with '/' or '*'", p)
		}
		if strings.Contains(p, "*") {
			m.patterns = append(m.patterns, pattern{glob: p, literal: len(p) - strings.Count(p, "*"), rule: rule})
		} else {
			m.exact[path.Clean(p)] = rule
		}
	}
	sort.Slice(m.patterns, func(i, j int) bool {
		a, b := m.patterns[i], m.patterns[j]
		if a.literal != b.literal {
			return a.literal > b.literal
		}
		return a.glob < b.glob
	})
	return m.wrap, nil
}

func (m *middleware) checkRule(where string, rule Rule) error {
	switch {
	case rule == Unlimited:
		return nil
	case where == "Default" && rule == Rule{}:
		return invalidf("Middleware: HTTPConfig.Default is not set: give it a rule, or ratelimit.Unlimited to limit only the paths named")
	}
	if err := rule.Validate(); err != nil {
		return invalidf("Middleware: HTTPConfig.%s: %s", where, reason(err))
	}
	if l := m.cfg.Limiter.longest; l > 0 && rule.Window > l {
		return invalidf("Middleware: HTTPConfig.%s: window %v is longer than the limiter's longest window %v", where, rule.Window, l)
	}
	return nil
}

// reason is what an error of invalidf says after its prefix, so that the
// middleware can say where the problem lies before it.
func reason(err error) string {
	return strings.TrimPrefix(err.Error(), invalidf("").Error())
}

// ruleFor picks the request's rule in the documented order.
func (m *middleware) ruleFor(r *http.Request, p string) Rule {
	if m.cfg.RuleFor != nil {
		if rule, ok := m.cfg.RuleFor(r); ok {
			return rule
		}
	}
	if rule, ok := m.exact[p]; ok {
		return rule
	}
	for _, pt := range m.patterns {
		if globMatch(pt.glob, p) {
			return pt.rule
		}
	}
	return m.cfg.Default
}

func (m *middleware) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean("/" + r.URL.Path)
		rule := m.ruleFor(r, p)
		if rule == Unlimited {
			next.ServeHTTP(w, r)
			return
		}
		l := m.cfg.Limiter
		ctx := r.Context()
		d, err := l.Consume(ctx, SafeKey(ClientKey(r, m.cfg.TrustedProxies)+"|"+p), rule)
		if err != nil {
			if m.cfg.OnError != nil {
				m.cfg.OnError(r, err)
			}
			if ctx.Err() != nil {
				// The request's own end, not an outage: the limiter denied it
				// whatever its policy, and nobody waits for the handler.
				if errors.Is(ctx.Err(), context.Canceled) {
					w.WriteHeader(httperr.StatusClientClosedRequest)
					return
				}
			} else if d.Allowed {
				next.ServeHTTP(w, r)
				return
			}
			httperr.Write(w, ErrorBody{Code: CodeUnavailable, Message: "The rate limiter is unavailable. Please try again later.",
				Status: http.StatusServiceUnavailable})
			return
		}
		now := time.UnixMilli(l.now())
		httperr.SetRateLimit(w.Header(), d.Limit, d.Remaining, httperr.Seconds(d.Reset.Sub(now)))
		if d.Allowed {
			next.ServeHTTP(w, r)
			return
		}
		httperr.Write(w, ErrorBody{Code: CodeRateLimited, Message: "Too many requests. Please try again later.",
			Status: http.StatusTooManyRequests, RetryAfter: max(httperr.Seconds(d.RetryAfter), 1)})
	})
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
