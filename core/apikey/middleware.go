package apikey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
)

// DefaultHeader is the request header the middleware reads the key from.
const DefaultHeader = "x-api-key"

// CodeMissing is the code the middleware answers when a request carries no key.
const CodeMissing Code = "MISSING_API_KEY"

// MiddlewareOption configures [Manager.Middleware].
type MiddlewareOption func(*middleware)

type middleware struct {
	header string
	cost   int64
}

// Header reads the key from the named header instead of x-api-key.
func Header(name string) MiddlewareOption { return func(m *middleware) { m.header = name } }

// RequestCost makes every request spend n units (default 1; 0 checks only).
func RequestCost(n int64) MiddlewareOption { return func(m *middleware) { m.cost = n } }

type ctxKey struct{}

// FromContext returns the key that the middleware verified for this request.
func FromContext(ctx context.Context) (*Key, bool) {
	k, ok := ctx.Value(ctxKey{}).(*Key)
	return k, ok && k != nil
}

// ErrorBody is the JSON body of the middleware's error responses.
type ErrorBody struct {
	Code       Code   `json:"code"`
	Message    string `json:"message"`
	Status     int    `json:"status"`
	TryAgainIn int64  `json:"tryAgainIn,omitempty"` // milliseconds
}

// Middleware returns net/http middleware that verifies the key in each
// request's header and passes the request on with the verified [Key] in
// its context ([FromContext]). A missing key answers 401 MISSING_API_KEY, a
// denial answers its status and code as JSON, and a failure answers 500
// (503 on contention).
//
// Every 401 carries WWW-Authenticate: ApiKey header="x-api-key" (naming
// the configured header), so a client learns where the key goes. Every 429
// carries the headers of [github.com/sluice-go/sluice/core/ratelimit.Middleware] that apply to the key:
// RateLimit-Limit (the per-key maximum, or for an exhausted quota the
// refill amount), RateLimit-Remaining (what the window or the quota has
// left), and, when the key can be used again, RateLimit-Reset and
// Retry-After in whole seconds, rounded up. A quota that never refills has
// neither, and no RateLimit-Limit: there is no time or amount to announce. Bad
// options (a nil one, an empty header name, a negative cost) are a
// programming error and panic when the middleware is built, never while it
// serves; a zero Manager answers every request 500.
func (m *Manager) Middleware(opts ...MiddlewareOption) func(http.Handler) http.Handler {
	cfg := middleware{header: DefaultHeader, cost: 1}
	for i, opt := range opts {
		if opt == nil {
			panic(fmt.Sprintf("apikey: Middleware: option %d of %d is nil", i+1, len(opts)))
		}
		opt(&cfg)
	}
	if cfg.header == "" || cfg.cost < 0 {
		panic("apikey: Middleware: empty header name or negative cost")
	}
	challenge := `ApiKey header=` + quote(cfg.header)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get(cfg.header)
			if key == "" {
				w.Header().Set("WWW-Authenticate", challenge)
				writeError(w, ErrorBody{Code: CodeMissing, Message: "missing API key in header " + cfg.header, Status: http.StatusUnauthorized})
				return
			}
			res, err := m.Verify(r.Context(), key, Cost(cfg.cost))
			switch {
			case errors.Is(err, core.ErrContention):
				writeError(w, ErrorBody{Code: "CONTENTION", Message: "the key is too busy; try again", Status: http.StatusServiceUnavailable})
				return
			case err != nil:
				writeError(w, ErrorBody{Code: "INTERNAL_ERROR", Message: "API key verification failed", Status: http.StatusInternalServerError})
				return
			case !res.Valid:
				switch res.Status {
				case http.StatusUnauthorized:
					w.Header().Set("WWW-Authenticate", challenge)
				case http.StatusTooManyRequests:
					setLimitHeaders(w.Header(), res, m.now())
				}
				writeError(w, ErrorBody{Code: res.Code, Message: res.Code.Message(), Status: res.Status, TryAgainIn: res.TryAgainIn.Milliseconds()})
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, res.Key)))
		})
	}
}

// setLimitHeaders describes a 429 in ratelimit.Middleware's headers. The
// key is the one the denial read: its window or quota as of the decision.
func setLimitHeaders(h http.Header, res Result, now time.Time) {
	switch k := res.Key; {
	case k == nil: // a 429 always comes with the key it read; without one only the time is known
	case res.Code == CodeRateLimited:
		left := k.RateLimit.Max // a window that is over (the request alone costs more than the maximum)
		if !k.LastRequest.IsZero() && k.LastRequest.Add(k.RateLimit.Window).After(now) {
			left = max(k.RateLimit.Max-k.RequestCount, 0)
		}
		h.Set("RateLimit-Limit", strconv.FormatInt(k.RateLimit.Max, 10))
		h.Set("RateLimit-Remaining", strconv.FormatInt(left, 10))
	case res.Code == CodeUsageExceeded:
		if k.Refill != (Refill{}) {
			h.Set("RateLimit-Limit", strconv.FormatInt(k.Refill.Amount, 10))
		}
		if k.Remaining != nil {
			h.Set("RateLimit-Remaining", strconv.FormatInt(max(*k.Remaining, 0), 10))
		}
	}
	if res.TryAgainIn > 0 {
		// Whole seconds, rounded up, so that a client waiting that long is admitted.
		secs := strconv.FormatInt(int64((res.TryAgainIn+time.Second-1)/time.Second), 10)
		h.Set("RateLimit-Reset", secs)
		h.Set("Retry-After", secs)
	}
}

// quote makes s an HTTP quoted-string (RFC 9110, section 5.6.4).
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func writeError(w http.ResponseWriter, body ErrorBody) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(body.Status)
	_ = json.NewEncoder(w).Encode(body)
}
