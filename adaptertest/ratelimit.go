package adaptertest

// rateLimitScenarios are the rate limiter's concurrent cases.
func rateLimitScenarios() []scenario { return nil }
