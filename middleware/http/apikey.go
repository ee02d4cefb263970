package sluicehttp

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// DefaultHeader is the request header [APIKey] reads the key from when
// [APIKeyConfig].Header is empty.
const DefaultHeader = "x-api-key"

// APIKeyConfig configures [APIKey].
type APIKeyConfig struct {
	// Manager verifies the keys. Required: made by apikey.New or
	// apikey.NewStorageOnly.
	Manager *apikey.Manager
	// Header names the request header the key is read from; empty means
	// [DefaultHeader].
	Header string
	// Verify are the options of every request's verification, as
	// Manager.Verify takes them: apikey.Cost (1 when absent; 0 checks
	// only), apikey.Permissions and apikey.AnyPermission (a key without
	// them answers 403 with apikey.CodeForbidden and spends nothing),
	// apikey.LimitCost. They are checked when the middleware is built.
	// Wrap each route in the middleware its permissions call for.
	Verify []apikey.VerifyOption
	// OnError, when set, receives the errors of verification (not its
	// denials), with the request, before the middleware answers 499, 500
	// or 503.
	OnError func(r *http.Request, err error)
	// Headers chooses the rate-limit headers of a 429, as
	// [RateLimitConfig].Headers does: [HeadersDefault] (the zero value),
	// [HeadersIETF], [HeadersLegacy] or [HeadersNone]. The key's window is
	// the policy "rate-limit" (q its Max, w its window), its quota the
	// policy "quota" (q the refill amount, w the refill interval; no w for
	// an anchored refill, no policy member and no t for a quota that never
	// refills):
	//
	//	RateLimit-Policy: "rate-limit";q=100;w=60
	//	RateLimit: "rate-limit";r=0;t=17
	Headers HeaderStyle
	// ProblemDetails, when true, answers a 429 with an RFC 9457
	// application/problem+json body ([Problem]) of the draft's
	// quota-exceeded type, its violated-policies "rate-limit" or "quota"
	// and its code the Result's (apikey.CodeRateLimited or
	// apikey.CodeUsageExceeded), instead of the JSON [ErrorBody]. Other
	// answers keep their ErrorBody.
	ProblemDetails bool
}

// The policies an API key's 429 names (see [APIKeyConfig].Headers).
const (
	keyWindowPolicy = "rate-limit"
	keyQuotaPolicy  = "quota"
)

type ctxKey struct{}

// KeyFromContext returns the key that [APIKey]'s middleware verified for
// the request whose context ctx is.
func KeyFromContext(ctx context.Context) (*apikey.Key, bool) {
	k, ok := ctx.Value(ctxKey{}).(*apikey.Key)
	return k, ok && k != nil
}

// APIKey returns net/http middleware that verifies the key in each
// request's header with cfg.Manager and passes the request on with the
// verified key in its context ([KeyFromContext]). Every other answer is an
// [ErrorBody] as JSON, in the shape of [RateLimit]'s: a missing key answers
// 401 [CodeMissingKey]; a denial answers its Result's status and code (403
// apikey.CodeForbidden for a key without a permission the route requires);
// a failure answers 500 [CodeInternal] or 503 [CodeContention], and 499
// with no body when the client hung up (the request's context was
// cancelled). No answer repeats the key the request carried.
//
// Every 401 carries WWW-Authenticate: ApiKey header="x-api-key" (naming
// the configured header), so a client learns where the key goes. Every 429
// carries the headers of [RateLimit] in the style [APIKeyConfig].Headers
// chooses; by default RateLimit-Limit (the per-key maximum, or for an
// exhausted quota the refill amount), RateLimit-Remaining (what the window
// or the quota has left), and, when the key can be used again,
// RateLimit-Reset, Retry-After and X-Retry-After in whole seconds, rounded
// up. A quota that never refills has neither, and no RateLimit-Limit:
// there is no time or amount to announce. With [HeadersIETF] the key's
// window or quota is a policy of the draft's fields, and
// [APIKeyConfig].ProblemDetails answers the 429 as problem details.
//
// A Manager not made by apikey.New or apikey.NewStorageOnly, an invalid
// header name or a verify option Manager.Verify would refuse is an error
// wrapping core.ErrInvalid that names it, such as
//
//	sluicehttp: APIKeyConfig.Verify: apikey: invalid request: CheckVerify: cost -1 is negative
func APIKey(cfg APIKeyConfig) (func(http.Handler) http.Handler, error) {
	if err := cfg.Manager.CheckVerify(); err != nil {
		return nil, invalidIn("APIKeyConfig.Manager", err)
	}
	if err := cfg.Manager.CheckVerify(cfg.Verify...); err != nil {
		return nil, invalidIn("APIKeyConfig.Verify", err)
	}
	if cfg.Header == "" {
		cfg.Header = DefaultHeader
	}
	if !isToken(cfg.Header) {
		return nil, invalidf("APIKeyConfig.Header %q is not a header name", cfg.Header)
	}
	if !cfg.Headers.valid() {
		return nil, invalidf("APIKeyConfig.Headers %v is not one of HeadersDefault, HeadersIETF, HeadersLegacy, HeadersNone", cfg.Headers)
	}
	verify := slices.Clone(cfg.Verify) // the caller may reuse its slice
	challenge := `ApiKey header=` + quote(cfg.Header)
	fail := func(w http.ResponseWriter, r *http.Request, err error) {
		if cfg.OnError != nil {
			cfg.OnError(r, err)
		}
		switch {
		case errors.Is(r.Context().Err(), context.Canceled):
			w.WriteHeader(statusClientClosedRequest) // nobody reads it; logs tell it from an outage
		case errors.Is(err, core.ErrContention):
			writeError(w, ErrorBody{Code: CodeContention, Message: "the key is too busy; try again", Status: http.StatusServiceUnavailable})
		default:
			writeError(w, ErrorBody{Code: CodeInternal, Message: "API key verification failed", Status: http.StatusInternalServerError})
		}
	}
	m := cfg.Manager
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get(cfg.Header)
			if key == "" {
				w.Header().Set("WWW-Authenticate", challenge)
				writeError(w, ErrorBody{Code: CodeMissingKey, Message: "missing API key in header " + cfg.Header, Status: http.StatusUnauthorized})
				return
			}
			res, err := m.Verify(r.Context(), key, verify...)
			if err != nil {
				fail(w, r, err)
				return
			}
			switch {
			case res.Valid:
			case res.Status == http.StatusTooManyRequests:
				denyKey(w, cfg, res, m.Now())
				return
			default:
				if res.Status == http.StatusUnauthorized {
					w.Header().Set("WWW-Authenticate", challenge)
				}
				writeError(w, ErrorBody{Code: string(res.Code), Message: res.Code.Message(), Status: res.Status,
					RetryAfter: seconds(res.TryAgainIn)})
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, res.Key)))
		})
	}, nil
}

// denyKey answers a 429 of the key's window or quota, decided at now, in
// the configured headers and body, which describe it as [RateLimit]
// describes a denial (see keyDenial).
func denyKey(w http.ResponseWriter, cfg APIKeyConfig, res apikey.Result, now time.Time) {
	rule, d := keyDenial(res, now)
	cfg.Headers.SetHeaders(w.Header(), rule, d, now)
	if cfg.ProblemDetails {
		p := quotaExceeded(rule, d, now)
		p.Code = string(res.Code)
		writeProblem(w, p)
		return
	}
	writeBody(w, ErrorBody{Code: string(res.Code), Message: res.Code.Message(), Status: res.Status,
		RetryAfter: retryAfter(d, d.PerRuleOf(rule), now)})
}

// keyDenial is a key's 429 as the rule and the denial [HeaderStyle]
// writes: the key's window (keyWindowPolicy: its Max, what it has left)
// or its quota (keyQuotaPolicy: the refill amount, what is left), as of
// the decision, with the Result's TryAgainIn as RetryAfter and as the
// time from now to Reset. A quota that never refills has no limit (-1)
// and no Reset: nothing to announce.
func keyDenial(res apikey.Result, now time.Time) (ratelimit.Rule, ratelimit.Decision) {
	rule := ratelimit.Rule{Name: keyQuotaPolicy}
	if res.Code == apikey.CodeRateLimited {
		rule.Name = keyWindowPolicy
	}
	d := ratelimit.Decision{Limit: -1, RetryAfter: max(res.TryAgainIn, 0)}
	switch k := res.Key; {
	case k == nil: // a 429 always comes with the key it read; without one only the time is known
	case res.Code == apikey.CodeRateLimited:
		rule.Window, rule.Max = k.RateLimit.Window, k.RateLimit.Max
		d.Limit, d.Remaining = k.RateLimit.Max, k.RateLimit.Max // a window that is over (the request alone costs more than the maximum)
		if !k.LastRequest.IsZero() && k.LastRequest.Add(k.RateLimit.Window).After(now) {
			d.Remaining = max(k.RateLimit.Max-k.RequestCount, 0)
		}
	case res.Code == apikey.CodeUsageExceeded:
		if k.Refill != (apikey.Refill{}) {
			rule.Max, rule.Window, d.Limit = k.Refill.Amount, k.Refill.Interval, k.Refill.Amount
		}
		if k.Remaining != nil {
			d.Remaining = max(*k.Remaining, 0)
		}
	}
	if d.RetryAfter > 0 {
		d.Reset = now.Add(d.RetryAfter)
	}
	return rule, d
}

// quote makes s an HTTP quoted-string (RFC 9110, section 5.6.4).
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
