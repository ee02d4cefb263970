package adaptertest

// raceScenarios are the concurrent IncrementOne cases.
func raceScenarios() []scenario { return nil }
