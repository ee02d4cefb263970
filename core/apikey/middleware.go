package apikey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

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
// denial answers its status and code as JSON (with Retry-After when it has
// a try-again time), and a failure answers 500 (503 on contention). Bad
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
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get(cfg.header)
			if key == "" {
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
				writeError(w, ErrorBody{Code: res.Code, Message: res.Code.Message(), Status: res.Status, TryAgainIn: res.TryAgainIn.Milliseconds()})
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, res.Key)))
		})
	}
}

func writeError(w http.ResponseWriter, body ErrorBody) {
	if body.TryAgainIn > 0 {
		// Retry-After is in whole seconds: round up so a client never retries early.
		w.Header().Set("Retry-After", strconv.FormatInt((body.TryAgainIn+999)/1000, 10))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(body.Status)
	_ = json.NewEncoder(w).Encode(body)
}
