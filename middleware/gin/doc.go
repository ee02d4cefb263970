// Package sluicegin puts sluice's rate limiter and API-key verification in
// front of gin handlers.
//
// It adapts the net/http middleware of sluicehttp (module middleware/http)
// rather than deciding anything itself: [RateLimit] runs
// sluicehttp.RateLimit with every option of sluicehttp.RateLimitConfig
// (key function, client IP behind trusted proxies, IPv4/IPv6 grouping,
// path rules and policies, exemptions, header styles (the IETF draft's
// RateLimit and RateLimit-Policy, one member per rule), problem details,
// custom denials), and [APIKey] runs sluicehttp.APIKey, so a gin service
// answers exactly as a net/http one: 429 with Retry-After, RateLimit-*
// headers and a JSON ErrorBody; 401 with WWW-Authenticate for a missing or
// invalid key. The verified key is
// in the request's context (sluicehttp.KeyFromContext(c.Request.Context()),
// or [KeyFromContext]).
//
//	limit, err := sluicegin.RateLimit(sluicehttp.RateLimitConfig{
//		Limiter: limiter,
//		Default: ratelimit.Rule{Window: time.Minute, Max: 100},
//	})
//	if err != nil { … }
//	requireKey, err := sluicegin.APIKey(sluicehttp.APIKeyConfig{Manager: keys})
//	if err != nil { … }
//	r := gin.New()
//	r.Use(limit)
//	r.GET("/api/me", requireKey, func(c *gin.Context) {
//		key, _ := sluicegin.KeyFromContext(c)
//		c.JSON(200, gin.H{"owner": key.ReferenceID})
//	})
//
// [Wrap] adapts any other net/http middleware the same way.
//
// This module depends on gin; core stays standard-library only.
package sluicegin
