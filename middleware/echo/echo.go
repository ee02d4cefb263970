package sluiceecho

import (
	"github.com/labstack/echo/v4"
	"github.com/sluice-go/sluice/core/apikey"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// ContextKey is the echo context key (c.Get) under which [APIKey]'s
// middleware stores the verified *apikey.Key.
const ContextKey = "sluice.apikey"

// RateLimit returns echo middleware that limits requests as
// sluicehttp.RateLimit(cfg) does, with every option of
// [sluicehttp.RateLimitConfig]: the same keys, rules, headers and answers.
// A denied or failed request is answered by the net/http middleware and
// the next handler does not run; an admitted one runs it with the
// rate-limit headers already set.
//
// The client is found as [sluicehttp.RateLimitConfig] says (the peer, or
// what a trusted proxy reports), not by echo's IPExtractor; the rule is
// chosen from the request's URL path, not echo's route. A bad
// configuration is the error of [sluicehttp.RateLimit], wrapping
// core.ErrInvalid.
func RateLimit(cfg sluicehttp.RateLimitConfig) (echo.MiddlewareFunc, error) {
	mw, err := sluicehttp.RateLimit(cfg)
	if err != nil {
		return nil, err
	}
	return echo.WrapMiddleware(mw), nil
}

// APIKey returns echo middleware that verifies each request's API key as
// sluicehttp.APIKey(cfg) does (the x-api-key header unless cfg.Header
// names another; cfg.Verify's options for every verification). A request
// without a valid key is answered by the net/http middleware (401, 403,
// 429, 500 or 503 with a sluicehttp.ErrorBody) and the next handler does
// not run. A verified request runs it with the key in c.Request()'s
// context, where sluicehttp.KeyFromContext and [KeyFromContext] find it,
// and in c's values under [ContextKey].
//
// A bad configuration is the error of [sluicehttp.APIKey], wrapping
// core.ErrInvalid.
func APIKey(cfg sluicehttp.APIKeyConfig) (echo.MiddlewareFunc, error) {
	mw, err := sluicehttp.APIKey(cfg)
	if err != nil {
		return nil, err
	}
	verify := echo.WrapMiddleware(mw)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return verify(func(c echo.Context) error {
			if k, ok := sluicehttp.KeyFromContext(c.Request().Context()); ok {
				c.Set(ContextKey, k)
			}
			return next(c)
		})
	}, nil
}

// KeyFromContext returns the key that [APIKey]'s middleware verified for
// c's request.
func KeyFromContext(c echo.Context) (*apikey.Key, bool) {
	if c == nil || c.Request() == nil {
		return nil, false
	}
	return sluicehttp.KeyFromContext(c.Request().Context())
}
