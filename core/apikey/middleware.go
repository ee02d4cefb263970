package apikey

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/internal/httperr"
)

// DefaultHeader is the request header the middleware reads the key from.
const DefaultHeader = "x-api-key"

// The codes the middleware answers besides the denial codes of [Result].
const (
	// CodeMissing answers 401 when a request carries no key.
	CodeMissing Code = "MISSING_API_KEY"
	// CodeContention answers 503 when the key is too busy to verify
	// ([core.ErrContention]): trying again may succeed.
	CodeContention Code = "CONTENTION"
	// CodeInternal answers 500 when verification failed.
	CodeInternal Code = "INTERNAL_ERROR"
)

// ErrorBody is the JSON body of the middleware's error responses, the same
// type as ratelimit.ErrorBody:
//
//	{"code":"RATE_LIMITED","message":"API key rate limit exceeded","status":429,"retryAfter":40}
//
// Code is stable, for programs (a [Code]: the denial codes of [Result],
// [CodeMissing], [CodeContention], [CodeInternal]); Message is for people;
// Status repeats the HTTP status; RetryAfter, in whole seconds rounded up,
// equals the Retry-After header and is omitted when there is none.
type ErrorBody = httperr.Body

// MiddlewareOption configures [Manager.Middleware].
type MiddlewareOption func(*middleware) error

type middleware struct {
	header  string
	cost    int64
	onError func(r *http.Request, err error)
	verify  []VerifyOption // the permissions the routes behind it require
}

// Header reads the key from the named header instead of x-api-key.
func Header(name string) MiddlewareOption {
	return func(m *middleware) error {
		if !isToken(name) {
			return invalidf("Middleware: Header(%q): not a valid header name", name)
		}
		m.header = name
		return nil
	}
}

// RequestCost makes every request spend n units (default 1; 0 checks only).
func RequestCost(n int64) MiddlewareOption {
	return func(m *middleware) error {
		if n < 0 {
			return invalidf("Middleware: RequestCost(%d): the cost must not be negative", n)
		}
		m.cost = n
		return nil
	}
}

// RequestPermissions makes every request require each listed action
// (resource → actions) of its key, as [Permissions] does for Verify: a key
// that lacks one answers 403 [CodeForbidden] and spends nothing. Wrap each
// route in the middleware its permissions call for.
func RequestPermissions(all map[string][]string) MiddlewareOption {
	return requestPermissions("RequestPermissions", all, Permissions)
}

// RequestAnyPermission makes every request require at least one listed
// action (resource → actions) of its key, as [AnyPermission] does for
// Verify: a key that holds none answers 403 [CodeForbidden] and spends
// nothing.
func RequestAnyPermission(any map[string][]string) MiddlewareOption {
	return requestPermissions("RequestAnyPermission", any, AnyPermission)
}

// RequestLimitCost makes every request spend cost units of its key's named
// limit name, as [LimitCost] does for Verify: a limit without room answers
// 429 [CodeRateLimited], spending nothing.
func RequestLimitCost(name string, cost int64) MiddlewareOption {
	return func(m *middleware) error {
		if err := checkLimitName(name); err != nil {
			return invalidf("Middleware: RequestLimitCost: %v", err)
		}
		if cost < 0 {
			return invalidf("Middleware: RequestLimitCost(%q, %d): the cost must not be negative", name, cost)
		}
		m.verify = append(m.verify, LimitCost(name, cost))
		return nil
	}
}

// requestPermissions checks p when the middleware is made, so that a bad
// list is an error then rather than a 500 on every request.
func requestPermissions(name string, p map[string][]string, option func(map[string][]string) VerifyOption) MiddlewareOption {
	return func(m *middleware) error {
		if _, err := flatten("Middleware: "+name, p); err != nil {
			return err
		}
		m.verify = append(m.verify, option(p))
		return nil
	}
}

// OnError makes the middleware pass the errors of verification (not its
// denials) to f, with the request, before it answers 499, 500 or 503.
func OnError(f func(r *http.Request, err error)) MiddlewareOption {
	return func(m *middleware) error {
		if f == nil {
			return invalidf("Middleware: OnError(nil)")
		}
		m.onError = f
		return nil
	}
}

type ctxKey struct{}

// FromContext returns the key that the middleware verified for this request.
func FromContext(ctx context.Context) (*Key, bool) {
	k, ok := ctx.Value(ctxKey{}).(*Key)
	return k, ok && k != nil
}

// Middleware returns net/http middleware that verifies the key in each
// request's header and passes the request on with the verified [Key] in
// its context ([FromContext]). Every other answer is an [ErrorBody] as
// JSON, in the shape of ratelimit.Middleware's: a missing key answers 401
// [CodeMissing]; a denial answers its status and code (403
// [CodeForbidden] for a key without a permission the route requires); a
// failure answers 500 [CodeInternal] or 503 [CodeContention], and 499 with
// no body when the client hung up (the request's context was cancelled).
//
// Every 401 carries WWW-Authenticate: ApiKey header="x-api-key" (naming
// the configured header), so a client learns where the key goes. Every 429
// carries the headers of ratelimit.Middleware that apply to the key:
// RateLimit-Limit (the per-key maximum, or for an exhausted quota the
// refill amount), RateLimit-Remaining (what the window or the quota has
// left), and, when the key can be used again, RateLimit-Reset,
// Retry-After and X-Retry-After in whole seconds, rounded up. A quota
// that never refills has neither, and no RateLimit-Limit: there is no time
// or amount to announce.
//
// A Manager not made by [New] or [NewStorageOnly], or a bad option (nil,
// an invalid header name, a negative cost), is an error wrapping
// [core.ErrInvalid] that names it, such as
//
//	apikey: invalid request: Middleware: RequestCost(-1): the cost must not be negative
func (m *Manager) Middleware(opts ...MiddlewareOption) (func(http.Handler) http.Handler, error) {
	if err := m.initialised("Middleware"); err != nil {
		return nil, err
	}
	cfg := middleware{header: DefaultHeader, cost: 1}
	for i, opt := range opts {
		if opt == nil {
			return nil, invalidf("Middleware: option %d of %d is nil", i+1, len(opts))
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	challenge := `ApiKey header=` + quote(cfg.header)
	verify := append([]VerifyOption{Cost(cfg.cost)}, cfg.verify...)
	fail := func(w http.ResponseWriter, r *http.Request, err error) {
		if cfg.onError != nil {
			cfg.onError(r, err)
		}
		switch {
		case errors.Is(r.Context().Err(), context.Canceled):
			w.WriteHeader(httperr.StatusClientClosedRequest) // nobody reads it; logs tell it from an outage
		case errors.Is(err, core.ErrContention):
			httperr.Write(w, ErrorBody{Code: string(CodeContention), Message: "the key is too busy; try again", Status: http.StatusServiceUnavailable})
		default:
			httperr.Write(w, ErrorBody{Code: string(CodeInternal), Message: "API key verification failed", Status: http.StatusInternalServerError})
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get(cfg.header)
			if key == "" {
				w.Header().Set("WWW-Authenticate", challenge)
				httperr.Write(w, ErrorBody{Code: string(CodeMissing), Message: "missing API key in header " + cfg.header, Status: http.StatusUnauthorized})
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
					setLimitHeaders(w.Header(), res, m.now())
				}
				httperr.Write(w, ErrorBody{Code: string(res.Code), Message: res.Code.Message(), Status: res.Status,
					RetryAfter: httperr.Seconds(res.TryAgainIn)})
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, res.Key)))
		})
	}, nil
}

// setLimitHeaders describes a 429 in ratelimit.Middleware's RateLimit-*
// headers (Retry-After comes with the body). The key is the one the
// denial read: its window or quota as of the decision.
func setLimitHeaders(h http.Header, res Result, now time.Time) {
	limit, left, reset := int64(-1), int64(-1), int64(-1)
	switch k := res.Key; {
	case k == nil: // a 429 always comes with the key it read; without one only the time is known
	case res.Code == CodeRateLimited:
		limit, left = k.RateLimit.Max, k.RateLimit.Max // a window that is over (the request alone costs more than the maximum)
		if !k.LastRequest.IsZero() && k.LastRequest.Add(k.RateLimit.Window).After(now) {
			left = max(k.RateLimit.Max-k.RequestCount, 0)
		}
	case res.Code == CodeUsageExceeded:
		if k.Refill != (Refill{}) {
			limit = k.Refill.Amount
		}
		if k.Remaining != nil {
			left = max(*k.Remaining, 0)
		}
	}
	if res.TryAgainIn > 0 {
		reset = httperr.Seconds(res.TryAgainIn)
	}
	httperr.SetRateLimit(h, limit, left, reset)
}

// quote makes s an HTTP quoted-string (RFC 9110, section 5.6.4).
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// isToken reports whether s is a valid header field name: an RFC 9110
// token, one or more of the letters, digits and !#$%&'*+-.^_`|~.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
