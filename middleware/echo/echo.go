package sluiceecho

import (
	"github.com/labstack/echo/v4"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// ContextKey is the echo context key (c.Get) under which [APIKey]'s
// middleware stores the verified *apikey.Key.
const ContextKey = "sluice.apikey"

// RateLimit returns echo middleware that limits requests as
// ratelimit.Middleware(cfg) does, with every option of
// [ratelimit.HTTPConfig]: the same keys, rules, headers and answers. A
// denied or failed request is answered by the net/http middleware and the
// next handler does not run; an admitted one runs it with the rate-limit
// headers already set.
//
// The client is found as [ratelimit.HTTPConfig] says (the peer, or what a
// trusted proxy reports), not by echo's IPExtractor; the rule is chosen
// from the request's URL path, not echo's route. A bad configuration is
// the error of [ratelimit.Middleware], wrapping core.ErrInvalid.
func RateLimit(cfg ratelimit.HTTPConfig) (echo.MiddlewareFunc, error) {
	mw, err := ratelimit.Middleware(cfg)
	if err != nil {
		return nil, err
	}
	return echo.WrapMiddleware(mw), nil
}

// APIKey returns echo middleware that verifies each request's API key as
// m.Middleware(opts...) does (the x-api-key header unless apikey.Header
// names another; apikey.RequestCost, apikey.OnError). A request without a
// valid key is answered by the net/http middleware (401, 429, 500 or 503
// with an apikey.ErrorBody) and the next handler does not run. A verified
// request runs it with the key in c.Request()'s context, where
// apikey.FromContext(c.Request().Context()) and [KeyFromContext] find it,
// and in c's values under [ContextKey].
//
// A Manager not made by apikey.New or apikey.NewStorageOnly, or a bad
// option, is the error of [apikey.Manager.Middleware], wrapping
// core.ErrInvalid.
func APIKey(m *apikey.Manager, opts ...apikey.MiddlewareOption) (echo.MiddlewareFunc, error) {
	mw, err := m.Middleware(opts...)
	if err != nil {
		return nil, err
	}
	verify := echo.WrapMiddleware(mw)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return verify(func(c echo.Context) error {
			if k, ok := apikey.FromContext(c.Request().Context()); ok {
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
	return apikey.FromContext(c.Request().Context())
}
