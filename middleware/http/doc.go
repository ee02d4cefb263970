// Package sluicehttp puts sluice's rate limiter and API-key verification
// in front of net/http handlers. It holds no decision of its own: the
// limiter (core/ratelimit) decides whether a request is admitted and the
// manager (core/apikey) whether a key is valid; this package finds what to
// ask them (the client's address, the path's rule, the key's header) and
// writes their answer as HTTP.
//
// [RateLimit] limits each client per path (or per [RateLimitConfig].Key),
// with the rule of the path ([RateLimitConfig].Paths, [ParseRules]), the
// client's address found behind trusted proxies ([ClientKey]) and grouped
// by prefix, and the rate-limit headers of a [HeaderStyle]. [APIKey]
// verifies the key in a request header with the manager's own verify
// options ([APIKeyConfig].Verify: apikey.Cost, apikey.Permissions,
// apikey.LimitCost) and puts the verified key in the request's context
// ([KeyFromContext]).
//
// Both answer in one shape: 429 with Retry-After, RateLimit-* headers and
// a JSON [ErrorBody]; 401 with WWW-Authenticate for a missing or invalid
// key; 503 when the limiter or the key's storage fails; 499 with no body
// when the client hung up. The gin, echo and gRPC middleware of sluice
// (modules middleware/gin, middleware/echo, middleware/grpc) run this
// package's middleware, so that every server answers alike.
//
//	limit, err := sluicehttp.RateLimit(sluicehttp.RateLimitConfig{
//		Limiter: limiter,
//		Default: ratelimit.Rule{Window: time.Minute, Max: 100},
//	})
//	if err != nil { … }
//	requireKey, err := sluicehttp.APIKey(sluicehttp.APIKeyConfig{Manager: keys})
//	if err != nil { … }
//	http.Handle("/api/", limit(requireKey(api)))
//
// On the client side, [Transport] is an http.RoundTripper that reads a
// denial's Retry-After, RateLimit and RateLimit-Policy fields
// ([ParseRetryAfter], [ParseRateLimit], [ParseRateLimitPolicy]) and waits
// and retries, bounded by its MaxWait and the request's context, or fails
// fast with a [*RateLimitedError] carrying the wait:
//
//	client := &http.Client{Transport: &sluicehttp.Transport{MaxWait: 30 * time.Second}}
//
// This module needs only the standard library and sluice's core.
package sluicehttp
