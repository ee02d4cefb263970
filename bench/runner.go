package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// scenario is the work of one cell.
type scenario string

const (
	hotKey      scenario = "hot key"
	uniformKeys scenario = "uniform keys"
	denialStorm scenario = "denial storm"
	// coldKeys is per-client limiting in a process that has just started:
	// the uniform keys, whose rows are live, decided by a limiter made
	// after the warm-up, which knows none of their windows' starts (see
	// approach.cold).
	coldKeys scenario = "cold keys"
)

var scenarios = []scenario{hotKey, uniformKeys, denialStorm, coldKeys}

const (
	// bigMax is the limit of the hot and uniform scenarios: never reached,
	// so that every decision does the full work of an admission.
	bigMax = int64(1) << 40
	// denyMax is the limit of the denial-storm key, which starts full.
	denyMax = int64(10)
	// window is every rule's window: longer than any run.
	window = time.Hour
	// burstMax, burstWorkers and burstTries shape the limit check: that many
	// goroutines released at once on a fresh key whose limit is burstMax,
	// each trying burstTries times.
	burstMax     = int64(50)
	burstWorkers = 64
	burstTries   = 4
)

// decideFunc makes one decision: key is the index of the key in the
// uniform scenario and 0 otherwise.
type decideFunc func(ctx context.Context, key int) (admitted bool, err error)

// approach is one way of deciding, on one backend.
type approach struct {
	name string
	kind kind
	// decider returns the decision of a scenario.
	decider func(sc scenario) decideFunc
	// stored returns the sum and the largest of the counts stored for the
	// scenario's keys, for the consistency check; nil when the storage
	// cannot be read back (Redis).
	stored func(ctx context.Context, sc scenario) (sum, max int64, err error)
	// cold: the approach runs the cold-keys scenario; its decider for it
	// is called again after the warm-up, so that a limiter it makes is a
	// new process's.
	cold bool
	// burst prepares the limit check on a fresh key of limit burstMax:
	// its decision and how to read its stored count (nil when unreadable).
	burst func(ctx context.Context) (decideFunc, func(ctx context.Context) (int64, error), error)
}

// kind groups approaches for the ratios.
type kind string

const (
	kindFloor     kind = "floor"
	kindPgxFloor  kind = "floor-pgx"
	kindReference kind = "reference"
	kindLocking   kind = "locking"
	kindIncrement kind = "increment"
	kindLimiter   kind = "limiter"
	kindCombining kind = "limiter-combining"
	kindAPIKey    kind = "apikey"
	kindAPIKeyRef kind = "apikey-reference"
	kindRedis     kind = "redis-sluice"
	kindRedisRate kind = "redis_rate"
)

// backend is one server with the approaches that run on it.
type backend struct {
	name       string
	version    string
	keys       int // uniform scenario size
	roundTrips func() int64
	// settle, when set, brings the backend's storage to the same state
	// before each cell, outside the measured time.
	settle     func(ctx context.Context) error
	approaches []*approach
	close      func()
}

// result is one cell of the table.
type result struct {
	DB         string
	Approach   string
	Kind       kind
	Scenario   scenario
	Goroutines int
	Decisions  int64 // measured decisions
	Admitted   int64 // measured admissions
	Errors     int64 // failed decisions, warm-up included
	FirstError string
	Elapsed    time.Duration
	P50, P99   time.Duration
	Allocs     float64       // per decision
	RoundTrips float64       // per decision
	ClientCPU  time.Duration // this process's CPU time per decision
	Rounds     int           // how many rounds the median was taken over
	PerRound   []float64     // decisions per second in each round, in round order
	Check      string        // what the correctness check found
	OK         bool
}

// PerSecond is the throughput of the cell.
func (r result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Decisions) / r.Elapsed.Seconds()
}

type phaseStats struct {
	decisions, admitted, errors int64
	firstErr                    error
	hist                        histogram
	elapsed                     time.Duration
}

// runPhase runs decide on g goroutines, released together, for d.
func runPhase(ctx context.Context, g int, d time.Duration, keys int, decide decideFunc, seed uint64) *phaseStats {
	var (
		stop  atomic.Bool
		start = make(chan struct{})
		wg    sync.WaitGroup
		mu    sync.Mutex
		total = &phaseStats{}
	)
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			local := new(phaseStats)
			<-start
			for !stop.Load() && ctx.Err() == nil {
				k := 0
				if keys > 1 {
					k = rng.IntN(keys)
				}
				t0 := time.Now()
				ok, err := decide(ctx, k)
				local.hist.add(time.Since(t0))
				local.decisions++
				switch {
				case err != nil:
					local.errors++
					if local.firstErr == nil {
						local.firstErr = err
					}
				case ok:
					local.admitted++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			total.decisions += local.decisions
			total.admitted += local.admitted
			total.errors += local.errors
			if total.firstErr == nil {
				total.firstErr = local.firstErr
			}
			total.hist.merge(&local.hist)
		}()
	}
	t0 := time.Now()
	close(start)
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	stop.Store(true)
	wg.Wait()
	total.elapsed = time.Since(t0)
	return total
}

// runCell measures one approach on one scenario with g goroutines:
// a warm-up (connections opened, statements prepared), then the measured
// run, then the consistency check over both.
func runCell(ctx context.Context, b *backend, a *approach, sc scenario, g int, d time.Duration) result {
	r := result{DB: b.name, Approach: a.name, Kind: a.kind, Scenario: sc, Goroutines: g}
	keys := 1
	if sc == uniformKeys || sc == coldKeys {
		keys = b.keys
	}
	decide := a.decider(sc)
	var sum0 int64
	if a.stored != nil {
		var err error
		if sum0, _, err = a.stored(ctx, sc); err != nil {
			r.Check = "read: " + err.Error()
			return r
		}
	}
	if b.settle != nil {
		if err := b.settle(ctx); err != nil {
			r.Check = "settle: " + err.Error()
			return r
		}
	}
	warm := min(d/5, 200*time.Millisecond)
	w := runPhase(ctx, g, warm, keys, decide, 1)
	if sc == coldKeys {
		decide = a.decider(sc) // a process that has just started, its connections open
	}

	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	rt0, cpu0 := b.roundTrips(), processCPU()
	p := runPhase(ctx, g, d, keys, decide, 2)
	rt1, cpu1 := b.roundTrips(), processCPU()
	runtime.ReadMemStats(&m1)

	r.Decisions, r.Admitted, r.Elapsed = p.decisions, p.admitted, p.elapsed
	r.Errors = w.errors + p.errors
	if err := firstOf(p.firstErr, w.firstErr); err != nil {
		r.FirstError = err.Error()
	}
	r.P50, r.P99 = p.hist.quantile(0.50), p.hist.quantile(0.99)
	if p.decisions > 0 {
		r.Allocs = float64(m1.Mallocs-m0.Mallocs) / float64(p.decisions)
		r.RoundTrips = float64(rt1-rt0) / float64(p.decisions)
		r.ClientCPU = (cpu1 - cpu0) / time.Duration(p.decisions)
	}

	admitted := w.admitted + p.admitted
	limit := bigMax
	if sc == denialStorm {
		limit = denyMax
	}
	var problems []string
	if r.Errors > 0 {
		problems = append(problems, fmt.Sprintf("%d errors: %s", r.Errors, r.FirstError))
	}
	if sc == denialStorm && admitted > 0 {
		problems = append(problems, fmt.Sprintf("admitted %d on a full key", admitted))
	}
	if r.Decisions == 0 {
		problems = append(problems, "no decision made")
	}
	if a.stored != nil {
		sum1, max1, err := a.stored(ctx, sc)
		switch {
		case err != nil:
			problems = append(problems, "read: "+err.Error())
		case max1 > limit:
			problems = append(problems, fmt.Sprintf("a count of %d is above the limit %d", max1, limit))
		case sum1-sum0 != admitted:
			problems = append(problems, fmt.Sprintf("admitted %d but the stored counts grew by %d", admitted, sum1-sum0))
		}
	}
	if len(problems) == 0 {
		r.OK = true
		r.Check = "ok"
	} else {
		r.Check = "FAIL: " + problems[0]
		for _, p := range problems[1:] {
			r.Check += "; " + p
		}
	}
	return r
}

func firstOf(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// burstCheck releases burstWorkers goroutines at once on a fresh key of
// limit burstMax, each deciding burstTries times: exactly burstMax must be
// admitted and stored. It returns "" when that holds.
func burstCheck(ctx context.Context, a *approach) string {
	decide, stored, err := a.burst(ctx)
	if err != nil {
		return "setup: " + err.Error()
	}
	var (
		admitted, errs atomic.Int64
		firstErr       atomic.Value
		start          = make(chan struct{})
		wg             sync.WaitGroup
	)
	for range burstWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range burstTries {
				ok, err := decide(ctx, 0)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				if ok {
					admitted.Add(1)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	switch n := admitted.Load(); {
	case n > burstMax:
		return fmt.Sprintf("admitted %d over a limit of %d", n, burstMax)
	case errs.Load() > 0:
		return fmt.Sprintf("%d errors: %v", errs.Load(), firstErr.Load())
	case n < burstMax:
		return fmt.Sprintf("admitted only %d of a limit of %d", n, burstMax)
	}
	if stored != nil {
		c, err := stored(ctx)
		if err != nil {
			return "read: " + err.Error()
		}
		if c != burstMax {
			return fmt.Sprintf("admitted %d but stored %d", burstMax, c)
		}
	}
	return ""
}

// medianOf keeps the round with the median throughput; the check fails
// when any round's did, and errors add up. It keeps every round's
// throughput too, for the ratios.
func medianOf(rounds []result) result {
	sorted := slices.Clone(rounds)
	slices.SortFunc(sorted, func(a, b result) int { return cmp.Compare(a.PerSecond(), b.PerSecond()) })
	m := sorted[len(sorted)/2]
	m.Errors = 0
	for _, r := range rounds {
		m.Errors += r.Errors
		if !r.OK && m.OK {
			m.OK, m.Check, m.FirstError = false, r.Check, r.FirstError
		}
	}
	m.Rounds = len(rounds)
	m.PerRound = nil
	for _, r := range rounds {
		m.PerRound = append(m.PerRound, r.PerSecond())
	}
	return m
}

// speedup is how many times faster a is than b: the median over rounds of
// a's throughput over b's in the same round, so that a slow round (the
// machine busy with something else, the server checkpointing) falls on
// both sides of each ratio. Without matching rounds it is the ratio of the
// medians.
func speedup(a, b result) float64 {
	if len(a.PerRound) == 0 || len(a.PerRound) != len(b.PerRound) {
		return a.PerSecond() / b.PerSecond()
	}
	rs := make([]float64, 0, len(a.PerRound))
	for i, x := range a.PerRound {
		if b.PerRound[i] > 0 {
			rs = append(rs, x/b.PerRound[i])
		}
	}
	if len(rs) == 0 {
		return 0
	}
	slices.Sort(rs)
	if len(rs)%2 == 1 {
		return rs[len(rs)/2]
	}
	return (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
}
