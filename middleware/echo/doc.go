// Package sluiceecho puts sluice's rate limiter and API-key verification
// in front of echo (v4) handlers.
//
// It adapts the net/http middleware of sluicehttp (module middleware/http)
// with echo.WrapMiddleware rather than deciding anything itself:
// [RateLimit] runs sluicehttp.RateLimit with every option of
// sluicehttp.RateLimitConfig (key function, client IP behind trusted
// proxies, IPv4/IPv6 grouping, path rules and policies, exemptions,
// header styles (the IETF draft's RateLimit and RateLimit-Policy, one
// member per rule), problem details, custom denials), and [APIKey] runs
// sluicehttp.APIKey, so an echo service answers exactly as a net/http
// one: 429 with Retry-After, RateLimit-* headers and a JSON
// ErrorBody; 401 with WWW-Authenticate for a missing or invalid key. The
// verified key is in the request's context
// (sluicehttp.KeyFromContext(c.Request().Context()), or [KeyFromContext]).
//
//	limit, err := sluiceecho.RateLimit(sluicehttp.RateLimitConfig{
//		Limiter: limiter,
//		Default: ratelimit.Rule{Window: time.Minute, Max: 100},
//	})
//	if err != nil { … }
//	requireKey, err := sluiceecho.APIKey(sluicehttp.APIKeyConfig{Manager: keys})
//	if err != nil { … }
//	e := echo.New()
//	e.Use(limit)
//	e.GET("/api/me", func(c echo.Context) error {
//		key, _ := sluiceecho.KeyFromContext(c)
//		return c.String(200, key.ReferenceID)
//	}, requireKey)
//
// echo.WrapMiddleware adapts any other net/http middleware the same way.
//
// This module depends on echo; core stays standard-library only.
package sluiceecho
