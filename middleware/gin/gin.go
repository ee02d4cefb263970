package sluicegin

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/sluice-go/sluice/core/apikey"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// ContextKey is the gin context key (c.Get, c.MustGet) under which
// [APIKey]'s middleware stores the verified *apikey.Key.
const ContextKey = "sluice.apikey"

// RateLimit returns gin middleware that limits requests as
// sluicehttp.RateLimit(cfg) does, with every option of
// [sluicehttp.RateLimitConfig]: the same keys, rules, headers and answers.
// A denied or failed request is answered by the net/http middleware and
// the gin chain is aborted; an admitted one runs the rest of the chain
// with the rate-limit headers already set.
//
// The rule is chosen from the request's URL path, not gin's route
// pattern; [sluicehttp.RateLimitConfig].Key and RuleFor can read anything
// else of the request. A bad configuration is the error of
// [sluicehttp.RateLimit], wrapping core.ErrInvalid.
func RateLimit(cfg sluicehttp.RateLimitConfig) (gin.HandlerFunc, error) {
	mw, err := sluicehttp.RateLimit(cfg)
	if err != nil {
		return nil, err
	}
	return wrap(mw, false), nil
}

// APIKey returns gin middleware that verifies each request's API key as
// sluicehttp.APIKey(cfg) does (the x-api-key header unless cfg.Header
// names another; cfg.Verify's options for every verification). A request
// without a valid key is answered by the net/http middleware (401, 403,
// 429, 500 or 503 with a sluicehttp.ErrorBody) and the chain is aborted.
// A verified request runs the rest of the chain with the key in
// c.Request's context, where sluicehttp.KeyFromContext and
// [KeyFromContext] find it, and in c's keys under [ContextKey].
//
// A bad configuration is the error of [sluicehttp.APIKey], wrapping
// core.ErrInvalid.
func APIKey(cfg sluicehttp.APIKeyConfig) (gin.HandlerFunc, error) {
	mw, err := sluicehttp.APIKey(cfg)
	if err != nil {
		return nil, err
	}
	return wrap(mw, true), nil
}

// KeyFromContext returns the key that [APIKey]'s middleware verified for
// c's request.
func KeyFromContext(c *gin.Context) (*apikey.Key, bool) {
	if c == nil || c.Request == nil {
		return nil, false
	}
	return sluicehttp.KeyFromContext(c.Request.Context())
}

// Wrap adapts net/http middleware to gin. The middleware sees gin's
// request and response writer; when it calls the handler it was given,
// c.Request becomes the request it passed (so values it put in the
// request's context reach the gin handlers) and the rest of the chain runs
// (c.Next). When it answers without calling that handler, the chain is
// aborted (c.Abort). A nil middleware is an error.
//
// The middleware must pass on gin's response writer, or one that writes
// through to it: the gin handlers write to c.Writer.
func Wrap(mw func(http.Handler) http.Handler) (gin.HandlerFunc, error) {
	if mw == nil {
		return nil, errors.New("sluicegin: Wrap: nil middleware")
	}
	return wrap(mw, false), nil
}

// wrap is [Wrap]; withKey also stores the verified API key in c's keys.
func wrap(mw func(http.Handler) http.Handler, withKey bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		passed := false
		mw(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			passed = true
			c.Request = r
			if k, ok := sluicehttp.KeyFromContext(r.Context()); ok && withKey {
				c.Set(ContextKey, k)
			}
			c.Next()
		})).ServeHTTP(c.Writer, c.Request)
		if !passed {
			c.Abort()
		}
	}
}
