package main

// The goals of issue #39 on the SQL databases: cold keys against the
// floor, and API-key verification against a careful hand-written one
// (handverify.go) and against Better Auth's (betterauth.go).

// perAdapterFunc is num's throughput over den's for each adapter.
type perAdapterFunc func(db string, num, den kind, sc scenario, g int) []namedValue

// perDecisionFunc is each adapter's own figure per decision.
type perDecisionFunc func(db string, k kind, sc scenario, g int, figure func(result) float64) []namedValue

// verifyTargets are issue #39's targets for verification ÷ the hand-written
// one (uniform keys, one hot key) and ÷ Better Auth's, per database.
var verifyTargets = map[string]struct{ uniform, hot, betterAuth float64 }{
	"postgres": {1.8, 1.5, 2.5},
	"mysql":    {1.2, 1.0, 2},
	"sqlite":   {1.2, 1.0, 2},
}

// sqlGoals adds issue #39's rows for db: at each of both's concurrencies
// the cold keys and the verification ratios, Better Auth's at g, and the
// allocations of a verification against the hand-written one's in the
// steady state (ssc, sg).
func (r *report) sqlGoals(db string, g int, both []int, ssc scenario, sg int, perAdapter perAdapterFunc, perDecision perDecisionFunc, add func(ratio)) {
	pg, my := db == "postgres", db == "mysql"
	coldTarget := 0.95
	if my {
		coldTarget = 0.9
	}
	vt := verifyTargets[db]
	for _, n := range both {
		add(ratio{DB: db, What: "rate limiter in a new process ÷ SQL floor", Scenario: coldKeys, Goroutines: n, Target: coldTarget, Binding: pg || my,
			Values: perAdapter(db, kindLimiter, kindFloor, coldKeys, n)})
		add(ratio{DB: db, What: "API-key verify ÷ hand-written verification", Scenario: uniformKeys, Goroutines: n, Target: vt.uniform, Binding: pg || my,
			Values: perAdapter(db, kindAPIKey, kindAPIKeyHand, uniformKeys, n)})
		add(ratio{DB: db, What: "API-key verify ÷ hand-written verification", Scenario: hotKey, Goroutines: n, Target: vt.hot, Binding: pg || my,
			Values: perAdapter(db, kindAPIKey, kindAPIKeyHand, hotKey, n)})
	}
	add(ratio{DB: db, What: "API-key verify ÷ Better Auth's verification", Scenario: uniformKeys, Goroutines: g, Target: vt.betterAuth, Binding: true,
		Values: perAdapter(db, kindAPIKey, kindAPIKeyRef, uniformKeys, g)})
	if h, ok := r.find(db, kindAPIKeyHand, "", ssc, sg); ok && h.Allocs > 0 {
		add(ratio{DB: db, What: "API-key verify allocations ÷ hand-written verification's", Scenario: ssc, Goroutines: sg, Target: 1.1, AtMost: true, Binding: true,
			Values: perDecision(db, kindAPIKey, ssc, sg, func(n result) float64 { return n.Allocs / h.Allocs })})
	}
}
