package adaptertest

// apiKeyScenarios are the API-key verifier's concurrent cases.
func apiKeyScenarios() []scenario { return nil }
