package sluicehttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"path"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// RateLimitConfig configures [RateLimit].
//
// A request's rule (or policy) is chosen in this order, the first that
// applies winning:
//  1. RuleFor, when set and it returns true;
//  2. Paths[path] or Policies[path], an exact path;
//  3. the matching pattern of Paths and Policies (keys containing '*',
//     where '*' matches any run of characters, '/' included) with the most
//     characters other than '*'; a tie goes to the pattern that sorts
//     first;
//  4. Default.
//
// Any of them may be ratelimit.Unlimited, which lets the request through
// untouched. The path is the request's URL path, cleaned (path.Clean),
// without its query.
//
// Then, in this order: a request that Skip reports true for, or whose
// client address is in ExemptClients, goes through unlimited; otherwise
// it is counted under its key (the client and the path, or Key's result
// and the rule) and admitted or denied.
//
// Every field after Limiter and Default changes nothing when it is left
// zero.
type RateLimitConfig struct {
	// Limiter decides the requests. Required.
	Limiter *ratelimit.Limiter
	// Default applies to paths no other rule names. Required: set it to
	// ratelimit.Unlimited to limit only the paths named.
	Default ratelimit.Rule
	// Paths maps exact paths and '*' patterns to rules. [ParseRules] builds
	// it from strings such as "100-M".
	Paths map[string]ratelimit.Rule
	// Policies maps exact paths and '*' patterns, as Paths does, to
	// policies: several named rules on one key, decided together by
	// ratelimit.Limiter.ConsumePolicy (admitted only when every rule that
	// is not a shadow rule admits; a denial charges none). A path is in
	// Paths or in Policies, not both. With [HeadersIETF] each rule of the
	// policy has its member in the RateLimit fields.
	Policies map[string]ratelimit.Policy
	// RuleFor, when set, is asked first; returning false falls through to
	// Paths, Policies and Default.
	RuleFor func(r *http.Request) (ratelimit.Rule, bool)
	// TrustedProxies are the proxies whose X-Forwarded-For (or
	// ClientIPHeader) is believed. See [ClientKey]. A prefix written as
	// IPv4-mapped IPv6 (::ffff:10.0.0.0/104) is taken as its IPv4 prefix
	// (10.0.0.0/8), since client addresses are compared as IPv4.
	TrustedProxies []netip.Prefix
	// OnError, when set, receives the limiter's errors and Key's. The
	// response is 503 when the limiter fails closed, and the request goes
	// through when it fails open; but when the request's own context is
	// done (the client hung up, or its deadline passed) the handler never
	// runs: the response is 499 (client closed request) after a
	// cancellation, and 503 after a deadline. A Key error, or an empty key,
	// is 500 with [CodeKeyFailed], whatever the failure policy.
	OnError func(r *http.Request, err error)

	// Key, when set, names the bucket a request is counted in instead of
	// its client address and path: a user id, an API key, a tenant, a
	// route. Requests with equal keys under the same rule share one budget
	// whatever their path (the rule is part of the stored key, so that two
	// rules never count in one bucket); put the path in the key to count
	// paths apart. Behind http.ServeMux (Go 1.22+), r.Pattern is the
	// pattern that routed the request, such as "GET /users/{id}", when the
	// middleware wraps the handler registered on the mux rather than the
	// mux itself; see [RateLimitConfig.ClientKey] to combine it with the
	// client's address. Any string will do: the middleware stores
	// ratelimit.SafeKey of it. An error, or an empty key, is never a
	// bypass: the request is refused with 500 and [CodeKeyFailed], and
	// OnError is told. Key is not called for Unlimited, skipped or exempt
	// requests.
	Key func(r *http.Request) (string, error)
	// ClientIPHeader, when set, names the header a trusted proxy writes the
	// client's address in, such as "X-Real-IP", "CF-Connecting-IP" or
	// "True-Client-IP"; it replaces X-Forwarded-For. It is believed only
	// when the connection's peer is in TrustedProxies (which must then be
	// set), so the proxy must overwrite any such header the client sent.
	// Its last value is used; from a trusted peer without the header, the
	// peer's own address. See [RateLimitConfig.ClientKey].
	ClientIPHeader string
	// IPv4Prefix groups IPv4 clients by this many leading bits, 1 to 32;
	// 0 means 32 (one address, one client).
	IPv4Prefix int
	// IPv6Prefix groups IPv6 clients by this many leading bits, 1 to 128;
	// 0 means 64 (one subscriber usually holds a whole /64).
	IPv6Prefix int
	// Skip, when set, lets the requests it reports true for through
	// unlimited, with no rate-limit header. It must not believe what a
	// client can write (a header, a query parameter) unless something the
	// client cannot forge, such as a verified credential, stands behind it.
	Skip func(r *http.Request) bool
	// ExemptClients are client addresses never limited, such as a
	// monitoring network. The address compared is the one the key is built
	// from (the peer's, or what a trusted proxy reports for it), not the
	// group of IPv4Prefix and IPv6Prefix; so only a client whose peer is
	// in TrustedProxies can be exempted through a header. Prefixes are
	// normalised as TrustedProxies' are.
	ExemptClients []netip.Prefix
	// OnDenied, when set, answers denied requests instead of the default
	// JSON 429 body. The style's headers, Retry-After included, are set
	// before it is called; it writes the status and body.
	OnDenied func(w http.ResponseWriter, r *http.Request, d ratelimit.Decision)
	// Headers chooses the rate-limit headers: [HeadersDefault] (the zero
	// value), [HeadersIETF], [HeadersLegacy] or [HeadersNone].
	Headers HeaderStyle
	// ProblemDetails, when true, answers a denial with an RFC 9457
	// application/problem+json body ([Problem]) of the draft's
	// quota-exceeded type, naming the rules that denied in
	// violated-policies, instead of the JSON [ErrorBody]. OnDenied, when
	// set, still answers instead.
	ProblemDetails bool
}

type rateLimit struct {
	cfg   RateLimitConfig
	rules paths
}

// RateLimit returns net/http middleware that limits each client (see
// [ClientKey]) per path with cfg.Limiter. The key is ratelimit.SafeKey of
// the client, "|", and the cleaned, decoded path: every key is storable,
// and a path keeps one key however the client percent-encodes it
// ("/l%6Fgin" is "/login"). [RateLimitConfig].Key replaces that key.
//
// Every limited response carries RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset (seconds until the window ends, rounded up). A denied
// request gets status 429, Retry-After and X-Retry-After in whole seconds,
// rounded up, and an [ErrorBody] with code [CodeRateLimited]; a failing
// limiter that fails closed answers 503 with [CodeUnavailable] (see
// [RateLimitConfig].OnError). [APIKey] answers in the same shape.
// [RateLimitConfig].Headers chooses other headers ([HeadersIETF]: the
// current draft's RateLimit and RateLimit-Policy, one member per rule),
// [RateLimitConfig].ProblemDetails an RFC 9457 body ([Problem]), and
// [RateLimitConfig].OnDenied another answer to a denial. Retry-After, and
// the body's retryAfter, are never less than the seconds until a denying
// rule's window ends.
//
// A bad configuration is an error wrapping core.ErrInvalid that names the
// field at fault, such as
//
//	sluicehttp: invalid request: RateLimitConfig.Paths["x"]: a path must start with '/' or '*'
func RateLimit(cfg RateLimitConfig) (func(http.Handler) http.Handler, error) {
	if cfg.Limiter == nil {
		return nil, invalidf("RateLimitConfig.Limiter is nil")
	}
	if err := cfg.Limiter.CheckRule(ratelimit.Unlimited); err != nil {
		return nil, invalidIn("RateLimitConfig.Limiter", err)
	}
	var err error
	if cfg.TrustedProxies, err = normalPrefixes("TrustedProxies", cfg.TrustedProxies); err != nil {
		return nil, err
	}
	if cfg.ExemptClients, err = normalPrefixes("ExemptClients", cfg.ExemptClients); err != nil {
		return nil, err
	}
	if err := checkClientConfig(&cfg); err != nil {
		return nil, err
	}
	if cfg.Default == (ratelimit.Rule{}) {
		return nil, invalidf("RateLimitConfig.Default is not set: give it a rule, or ratelimit.Unlimited to limit only the paths named")
	}
	rules, err := newPaths(&cfg)
	if err != nil {
		return nil, err
	}
	m := &rateLimit{cfg: cfg, rules: rules}
	return m.wrap, nil
}

// normalPrefixes checks and normalises the prefixes of the field named
// (see normalPrefix).
func normalPrefixes(field string, ps []netip.Prefix) ([]netip.Prefix, error) {
	if ps == nil {
		return nil, nil
	}
	out := make([]netip.Prefix, len(ps))
	for i, p := range ps {
		np, err := normalPrefix(p)
		if err != nil {
			return nil, invalidf("RateLimitConfig.%s[%d]: %v", field, i, err)
		}
		out[i] = np
	}
	return out, nil
}

// checkClientConfig checks the fields that find the client, and sets the
// prefix lengths' defaults.
func checkClientConfig(cfg *RateLimitConfig) error {
	if h := cfg.ClientIPHeader; h != "" {
		switch {
		case !isToken(h):
			return invalidf("RateLimitConfig.ClientIPHeader %q is not a header name", h)
		case http.CanonicalHeaderKey(h) == "X-Forwarded-For":
			return invalidf("RateLimitConfig.ClientIPHeader %q: leave it empty to read X-Forwarded-For, whose hops are read from the right", h)
		case len(cfg.TrustedProxies) == 0:
			return invalidf("RateLimitConfig.ClientIPHeader %q is set but TrustedProxies is empty: the header is believed only from a trusted proxy", h)
		}
	}
	switch {
	case cfg.IPv4Prefix < 0 || cfg.IPv4Prefix > 32:
		return invalidf("RateLimitConfig.IPv4Prefix %d is not between 1 and 32 (0 for the default, 32)", cfg.IPv4Prefix)
	case cfg.IPv6Prefix < 0 || cfg.IPv6Prefix > 128:
		return invalidf("RateLimitConfig.IPv6Prefix %d is not between 1 and 128 (0 for the default, 64)", cfg.IPv6Prefix)
	case !cfg.Headers.valid():
		return invalidf("RateLimitConfig.Headers %v is not one of HeadersDefault, HeadersIETF, HeadersLegacy, HeadersNone", cfg.Headers)
	}
	cfg.IPv4Prefix, cfg.IPv6Prefix = prefixOr(cfg.IPv4Prefix, 32), prefixOr(cfg.IPv6Prefix, 64)
	return nil
}

func (m *rateLimit) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean("/" + r.URL.Path)
		lim := m.limitFor(r, p)
		if lim.unlimited() || (m.cfg.Skip != nil && m.cfg.Skip(r)) {
			next.ServeHTTP(w, r)
			return
		}
		var (
			addr   netip.Addr
			addrOK bool
		)
		if m.cfg.Key == nil || m.cfg.ExemptClients != nil {
			addr, addrOK = clientAddr(r, m.cfg.TrustedProxies, m.cfg.ClientIPHeader)
			if addrOK && isTrusted(addr, m.cfg.ExemptClients) {
				next.ServeHTTP(w, r)
				return
			}
		}
		key, err := m.key(r, p, lim, addr, addrOK)
		if err != nil {
			m.report(r, err)
			writeBody(w, ErrorBody{Code: CodeKeyFailed, Message: "The request could not be identified for rate limiting.",
				Status: http.StatusInternalServerError})
			return
		}
		l := m.cfg.Limiter
		ctx := r.Context()
		d, err := m.consume(ctx, key, lim)
		if err != nil {
			m.report(r, err)
			if ctx.Err() != nil {
				// The request's own end, not an outage: the limiter denied it
				// whatever its policy, and nobody waits for the handler.
				if errors.Is(ctx.Err(), context.Canceled) {
					w.WriteHeader(statusClientClosedRequest)
					return
				}
			} else if d.Allowed {
				next.ServeHTTP(w, r)
				return
			}
			writeError(w, ErrorBody{Code: CodeUnavailable, Message: "The rate limiter is unavailable. Please try again later.",
				Status: http.StatusServiceUnavailable})
			return
		}
		now := l.Now()
		m.cfg.Headers.SetHeaders(w.Header(), lim.rule, d, now)
		switch {
		case d.Allowed:
			next.ServeHTTP(w, r)
		case m.cfg.OnDenied != nil:
			m.cfg.OnDenied(w, r, d)
		case m.cfg.ProblemDetails:
			writeProblem(w, quotaExceeded(lim.rule, d, now))
		default:
			// The style set Retry-After already (or, for none, chose not to).
			writeBody(w, ErrorBody{Code: CodeRateLimited, Message: "Too many requests. Please try again later.",
				Status: http.StatusTooManyRequests, RetryAfter: retryAfter(d, d.PerRuleOf(lim.rule), now)})
		}
	})
}

func (m *rateLimit) report(r *http.Request, err error) {
	if m.cfg.OnError != nil {
		m.cfg.OnError(r, err)
	}
}

// consume decides the request under lim.
func (m *rateLimit) consume(ctx context.Context, key string, lim limit) (ratelimit.Decision, error) {
	if lim.policy != nil {
		return m.cfg.Limiter.ConsumePolicy(ctx, key, lim.policy, 1)
	}
	return m.cfg.Limiter.Consume(ctx, key, lim.rule)
}

// key returns the request's stored key: the client's group (from addr) and
// the path, or Key's result and the rule or policy.
func (m *rateLimit) key(r *http.Request, p string, lim limit, addr netip.Addr, addrOK bool) (string, error) {
	if m.cfg.Key == nil {
		client := UnknownClient
		if addrOK {
			client = group(addr, m.cfg.IPv4Prefix, m.cfg.IPv6Prefix)
		}
		return ratelimit.SafeKey(client + "|" + p), nil
	}
	k, err := m.cfg.Key(r)
	switch {
	case err != nil:
		return "", fmt.Errorf("sluicehttp: RateLimitConfig.Key: %w", err)
	case k == "":
		return "", errors.New("sluicehttp: RateLimitConfig.Key returned an empty key")
	}
	return ratelimit.SafeKey(k + "|" + lim.String()), nil
}
