package core

// The fallback's bounds and the built-in models, for core_test.
const (
	FallbackAttempts = fallbackAttempts
	FallbackMaxWait  = fallbackMaxWait
)

// RateLimitModel is the rateLimit model.
var RateLimitModel = rateLimitModel
