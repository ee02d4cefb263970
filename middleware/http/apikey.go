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
}

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
// carries the headers of [RateLimit] that apply to the key:
// RateLimit-Limit (the per-key maximum, or for an exhausted quota the
// refill amount), RateLimit-Remaining (what the window or the quota has
// left), and, when the key can be used again, RateLimit-Reset,
// Retry-After and X-Retry-After in whole seconds, rounded up. A quota
// that never refills has neither, and no RateLimit-Limit: there is no time
// or amount to announce.
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
			if !res.Valid {
				switch res.Status {
				case http.StatusUnauthorized:
					w.Header().Set("WWW-Authenticate", challenge)
				case http.StatusTooManyRequests:
					setKeyLimitHeaders(w.Header(), res, m.Now())
				}
				writeError(w, ErrorBody{Code: string(res.Code), Message: res.Code.Message(), Status: res.Status,
					RetryAfter: seconds(res.TryAgainIn)})
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, res.Key)))
		})
	}, nil
}

// setKeyLimitHeaders describes a 429 in [RateLimit]'s RateLimit-* headers
// (Retry-After comes with the body). The key is the one the denial read:
// its window or quota as of the decision.
func setKeyLimitHeaders(h http.Header, res apikey.Result, now time.Time) {
	limit, left, reset := int64(-1), int64(-1), int64(-1)
	switch k := res.Key; {
	case k == nil: // a 429 always comes with the key it read; without one only the time is known
	case res.Code == apikey.CodeRateLimited:
		limit, left = k.RateLimit.Max, k.RateLimit.Max // a window that is over (the request alone costs more than the maximum)
		if !k.LastRequest.IsZero() && k.LastRequest.Add(k.RateLimit.Window).After(now) {
			left = max(k.RateLimit.Max-k.RequestCount, 0)
		}
	case res.Code == apikey.CodeUsageExceeded:
		if k.Refill != (apikey.Refill{}) {
			limit = k.Refill.Amount
		}
		if k.Remaining != nil {
			left = max(*k.Remaining, 0)
		}
	}
	if res.TryAgainIn > 0 {
		reset = seconds(res.TryAgainIn)
	}
	setRateLimit(h, limit, left, reset)
}

// quote makes s an HTTP quoted-string (RFC 9110, section 5.6.4).
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
