package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// report is the whole run: every cell and the ratios drawn from them.
type report struct {
	cfg               config
	started, finished time.Time
	versions, skipped []string
	results           []result
}

func (r *report) failures() int {
	n := 0
	for _, c := range r.results {
		if !c.OK {
			n++
		}
	}
	return n
}

// ratioGoroutines is the concurrency the ratios compare at: 32, the
// issue's figure for locking, when it was run, else the largest.
func (r *report) ratioGoroutines() int {
	best := 0
	for _, g := range r.cfg.goroutines {
		if g == 32 {
			return 32
		}
		best = max(best, g)
	}
	return best
}

func (r *report) find(db string, k kind, adapter string, sc scenario, g int) (result, bool) {
	for _, c := range r.results {
		if c.DB == db && c.Kind == k && c.Scenario == sc && c.Goroutines == g &&
			(adapter == "" || strings.HasPrefix(c.Approach, adapter+" ")) {
			return c, true
		}
	}
	return result{}, false
}

// ratio is one figure held to a target of the performance issue: a
// ratio of two approaches' decisions per second, or (Per set) one
// approach's own figure per decision.
type ratio struct {
	DB, What   string
	Scenario   scenario
	Goroutines int
	Values     []namedValue // one per adapter (or one)
	Target     float64      // 0: information only
	AtMost     bool         // the target is a ceiling, not a floor
	Binding    bool         // the target applies to this backend
}

type namedValue struct {
	Name  string
	Value float64
}

// worst is the value held to the target: the least, or with AtMost the
// greatest.
func (q ratio) worst() float64 {
	w := q.Values[0].Value
	for _, v := range q.Values[1:] {
		if q.AtMost {
			w = max(w, v.Value)
		} else {
			w = min(w, v.Value)
		}
	}
	return w
}

// Verdict says whether the target is met.
func (q ratio) Verdict() string {
	met := q.worst() >= q.Target
	if q.AtMost {
		met = q.worst() <= q.Target
	}
	switch {
	case q.Target == 0:
		return "info"
	case !q.Binding && met:
		return "(met)"
	case !q.Binding:
		return "(missed)"
	case met:
		return "met"
	default:
		return "MISSED"
	}
}

// atBoth are the concurrencies of a goal set "at 1 and 32 goroutines":
// 1 when it was run, and the ratios' own (32 when it was run).
func (r *report) atBoth() []int {
	g := r.ratioGoroutines()
	if g != 1 && slices.Contains(r.cfg.goroutines, 1) {
		return []int{1, g}
	}
	return []int{g}
}

func goroutinesText(n int) string {
	if n == 1 {
		return "1 goroutine"
	}
	return fmt.Sprintf("%d goroutines", n)
}

// ratios holds each run against the goals of the performance issue (#17),
// one row per goal, database, scenario and concurrency.
func (r *report) ratios() []ratio {
	g := r.ratioGoroutines()
	var out []ratio
	dbs := []string{}
	for _, c := range r.results {
		if len(dbs) == 0 || dbs[len(dbs)-1] != c.DB {
			dbs = append(dbs, c.DB)
		}
	}
	// perAdapter is num's figure over den's for each adapter, in one
	// scenario and at g goroutines.
	perAdapter := func(db string, num kind, den kind, sc scenario, g int) []namedValue {
		d, ok := r.find(db, den, "", sc, g)
		if !ok || d.PerSecond() == 0 {
			return nil
		}
		var vs []namedValue
		for _, ad := range ormNames {
			if n, ok := r.find(db, num, ad, sc, g); ok {
				vs = append(vs, namedValue{ad, speedup(n, d)})
			}
		}
		return vs
	}
	// perDecision is each adapter's own figure per decision.
	perDecision := func(db string, k kind, sc scenario, g int, figure func(result) float64) []namedValue {
		var vs []namedValue
		for _, ad := range ormNames {
			if n, ok := r.find(db, k, ad, sc, g); ok {
				vs = append(vs, namedValue{ad, figure(n)})
			}
		}
		return vs
	}
	only := func(name string, vs []namedValue) []namedValue {
		return slices.DeleteFunc(vs, func(v namedValue) bool { return v.Name != name })
	}
	add := func(q ratio) {
		if len(q.Values) > 0 {
			out = append(out, q)
		}
	}
	both := r.atBoth()
	// Goal 4: a limiter decision allocates at most 15 more times than
	// the floor's, on every adapter; goal 3: a verification takes one
	// round trip (two on MySQL and MariaDB) and at most 80 allocations.
	// Both are about the steady state: one goroutine on the hot key when
	// that was run, where every decision finds its row and no other
	// writer; on uniform keys a short cell opens a window on most keys.
	ssc, sg := uniformKeys, g
	if slices.Contains(both, 1) {
		ssc, sg = hotKey, 1
	}
	for _, db := range dbs {
		if strings.HasPrefix(db, "redis") {
			// Issue 39: sluice at least 1.1× redis_rate, fixed window and
			// GCRA against GCRA; beside them, for the record, ulule's
			// Redis store and the one-EVALSHA floor.
			for _, sc := range r.cfg.scenarios {
				n, ok1 := r.find(db, kindRedis, "", sc, g)
				d, ok2 := r.find(db, kindRedisRate, "", sc, g)
				if ok1 && ok2 && d.PerSecond() > 0 {
					add(ratio{DB: db, What: "sluice Redis storage ÷ redis_rate", Scenario: sc, Goroutines: g, Target: 1.1, Binding: true,
						Values: []namedValue{{"sluice", speedup(n, d)}}})
				}
				if n, ok := r.find(db, kindRedisGCRA, "", sc, g); ok && ok2 && d.PerSecond() > 0 {
					add(ratio{DB: db, What: "sluice Redis GCRA ÷ redis_rate (both GCRA)", Scenario: sc, Goroutines: g, Target: 1.1, Binding: true,
						Values: []namedValue{{"sluice", speedup(n, d)}}})
				}
				if u, ok := r.find(db, kindRedisUlule, "", sc, g); ok && ok1 && u.PerSecond() > 0 {
					add(ratio{DB: db, What: "sluice Redis storage ÷ ulule/limiter's Redis store", Scenario: sc, Goroutines: g, Target: 1.1,
						Values: []namedValue{{"sluice", speedup(n, u)}}})
				}
				if a, ok := r.find(db, kindRedisAlone, "", sc, g); ok && ok2 && d.PerSecond() > 0 {
					// What the batching of concurrent scripts adds: the same
					// limiter with every script on its own round trip.
					add(ratio{DB: db, What: "sluice Redis storage, every call alone (WithInFlight(0)) ÷ redis_rate", Scenario: sc, Goroutines: g, Target: 1.1,
						Values: []namedValue{{"sluice", speedup(a, d)}}})
				}
				if f, ok := r.find(db, kindRedisFloor, "", sc, g); ok && ok2 && d.PerSecond() > 0 {
					// The ceiling of a decision on its own round trip: no
					// decision in one unbatched EVALSHA does less.
					add(ratio{DB: db, What: "the one-EVALSHA floor ÷ redis_rate (what 1.1 asks of the floor)", Scenario: sc, Goroutines: g, Target: 1.1,
						Values: []namedValue{{"floor", speedup(f, d)}}})
				}
				if f, ok := r.find(db, kindRedisFloor, "", sc, g); ok && ok1 && f.PerSecond() > 0 {
					add(ratio{DB: db, What: "sluice Redis storage ÷ the one-EVALSHA floor", Scenario: sc, Goroutines: g, Target: 0.9,
						Values: []namedValue{{"sluice", speedup(n, f)}}})
				}
			}
			continue
		}
		pg, my := db == "postgres", db == "mysql"
		for _, n := range both {
			// Goal 4 on PostgreSQL; goal 1 on MySQL and MariaDB, whose
			// target is lower: the floor there is the bare UPDATE, where the
			// limiter also learns the window's start.
			target := 0.95
			if my {
				target = 0.85
			}
			add(ratio{DB: db, What: "rate limiter ÷ SQL floor", Scenario: uniformKeys, Goroutines: n, Target: target, Binding: pg,
				Values: perAdapter(db, kindLimiter, kindFloor, uniformKeys, n)})
			add(ratio{DB: db, What: "rate limiter ÷ SQL floor", Scenario: hotKey, Goroutines: n, Target: target, Binding: pg || my,
				Values: perAdapter(db, kindLimiter, kindFloor, hotKey, n)})
			// The pgx adapter is held to the database/sql floor at 1.0 (goal
			// 4), and to the floor on its own pool, where it runs.
			add(ratio{DB: db, What: "pgx rate limiter ÷ SQL floor on database/sql", Scenario: uniformKeys, Goroutines: n, Target: 1, Binding: pg,
				Values: only("pgx", perAdapter(db, kindLimiter, kindFloor, uniformKeys, n))})
			add(ratio{DB: db, What: "pgx rate limiter ÷ SQL floor on database/sql", Scenario: hotKey, Goroutines: n, Target: 1, Binding: pg,
				Values: only("pgx", perAdapter(db, kindLimiter, kindFloor, hotKey, n))})
			add(ratio{DB: db, What: "rate limiter ÷ SQL floor on pgx's pool", Scenario: uniformKeys, Goroutines: n, Target: 0.95, Binding: pg,
				Values: only("pgx", perAdapter(db, kindLimiter, kindPgxFloor, uniformKeys, n))})
			add(ratio{DB: db, What: "rate limiter ÷ SQL floor on pgx's pool", Scenario: hotKey, Goroutines: n, Target: 0.95, Binding: pg,
				Values: only("pgx", perAdapter(db, kindLimiter, kindPgxFloor, hotKey, n))})
			add(ratio{DB: db, What: "rate limiter ÷ pessimistic locking", Scenario: hotKey, Goroutines: n, Target: 2, Binding: pg || my,
				Values: perAdapter(db, kindLimiter, kindLocking, hotKey, n)})
			// The same ratio for the hand-written guarded UPDATE: a limiter
			// that sends the floor's one statement cannot run faster than
			// the floor, so this is the ceiling of the row above.
			if f, ok := r.find(db, kindFloor, "", hotKey, n); ok {
				if l, ok := r.find(db, kindLocking, "", hotKey, n); ok && l.PerSecond() > 0 {
					add(ratio{DB: db, What: "SQL floor ÷ pessimistic locking (the ceiling above)", Scenario: hotKey, Goroutines: n,
						Values: []namedValue{{"floor", speedup(f, l)}}})
				}
			}
		}
		add(ratio{DB: db, What: "rate limiter ÷ read-then-write reference", Scenario: uniformKeys, Goroutines: g, Target: 1.5, Binding: pg,
			Values: perAdapter(db, kindLimiter, kindReference, uniformKeys, g)})
		add(ratio{DB: db, What: "rate limiter ÷ SQL floor", Scenario: denialStorm, Goroutines: g, Target: 10, Binding: pg,
			Values: perAdapter(db, kindLimiter, kindFloor, denialStorm, g)})
		add(ratio{DB: db, What: "rate limiter with write combining ÷ SQL floor", Scenario: hotKey, Goroutines: g, Target: 10,
			Binding: pg || my, Values: perAdapter(db, kindCombining, kindFloor, hotKey, g)})
		add(ratio{DB: db, What: "IncrementOne ÷ SQL floor", Scenario: uniformKeys, Goroutines: g,
			Values: perAdapter(db, kindIncrement, kindFloor, uniformKeys, g)})
		if f, ok := r.find(db, kindFloor, "", ssc, sg); ok {
			add(ratio{DB: db, What: "rate limiter allocations per decision − SQL floor's", Scenario: ssc, Goroutines: sg, Target: 15, AtMost: true, Binding: true,
				Values: perDecision(db, kindLimiter, ssc, sg, func(n result) float64 { return n.Allocs - f.Allocs })})
		}
		r.sqlGoals(db, g, both, ssc, sg, perAdapter, perDecision, add)
		rts := 1.0
		if my {
			rts = 2
		}
		add(ratio{DB: db, What: "API-key verify round trips per verification", Scenario: ssc, Goroutines: sg, Target: rts, AtMost: true, Binding: true,
			Values: perDecision(db, kindAPIKey, ssc, sg, func(n result) float64 { return n.RoundTrips })})
		add(ratio{DB: db, What: "API-key verify allocations per verification", Scenario: ssc, Goroutines: sg, Target: 80, AtMost: true, Binding: true,
			Values: perDecision(db, kindAPIKey, ssc, sg, func(n result) float64 { return n.Allocs })})
	}
	return out
}

func (q ratio) valuesText() string {
	var parts []string
	for _, v := range q.Values {
		parts = append(parts, fmt.Sprintf("%s %.2f", v.Name, v.Value))
	}
	return strings.Join(parts, ", ")
}

func (q ratio) targetText() string {
	switch {
	case q.Target == 0:
		return "—"
	case q.AtMost:
		return fmt.Sprintf("≤ %g", q.Target)
	}
	return fmt.Sprintf("≥ %g", q.Target)
}

// groupDigits formats a rate with thousands separators.
func groupDigits(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func fmtLatency(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	}
}

var tableHeader = []string{"db", "scenario", "goroutines", "approach", "decisions/s", "p50", "p99", "allocs/decision", "round trips/decision", "client CPU/decision", "admitted", "check"}

func (c result) cells() []string {
	return []string{
		c.DB, string(c.Scenario), fmt.Sprint(c.Goroutines), c.Approach,
		groupDigits(c.PerSecond()), fmtLatency(c.P50), fmtLatency(c.P99),
		fmt.Sprintf("%.1f", c.Allocs), fmt.Sprintf("%.2f", c.RoundTrips), fmtLatency(c.ClientCPU),
		fmt.Sprintf("%d/%d", c.Admitted, c.Decisions), c.Check,
	}
}

func (r *report) settings() string {
	gs := make([]string, len(r.cfg.goroutines))
	for i, g := range r.cfg.goroutines {
		gs[i] = fmt.Sprint(g)
	}
	commit := "durable commits (the servers' defaults)"
	if r.cfg.asyncCommit {
		commit = "asynchronous commits on PostgreSQL and SQLite (-async-commit)"
	}
	rounds := ""
	if r.cfg.rounds > 1 {
		rounds = fmt.Sprintf(", median of %d interleaved rounds", r.cfg.rounds)
	}
	return fmt.Sprintf("%s per cell (after a warm-up)%s, goroutines %s, %d uniform keys, pools of %d connections (SQLite %d), %s; %s/%s, %d CPUs, %s",
		r.cfg.duration, rounds, strings.Join(gs, ", "), r.cfg.keys, r.cfg.conns, r.cfg.sqliteConns, commit,
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

func (r *report) writeText(w io.Writer) {
	fmt.Fprintf(w, "sluice benchmark: %s\n", r.settings())
	for _, v := range r.versions {
		fmt.Fprintf(w, "  %s\n", v)
	}
	for _, s := range r.skipped {
		fmt.Fprintf(w, "  skipped: %s\n", s)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(tableHeader, "\t")+"\t")
	for _, c := range r.results {
		fmt.Fprintln(tw, strings.Join(c.cells(), "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintf(w, "\nthe goals (a verdict in parentheses is for information: that target does not apply to that database):\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, q := range r.ratios() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\ttarget %s\t%s\n", q.DB, q.What, q.Scenario, goroutinesText(q.Goroutines), q.valuesText(), q.targetText(), q.Verdict())
	}
	tw.Flush()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# sluice benchmark results\n\n")
	fmt.Fprintf(&b, "Run on %s, in %s, with:\n\n    %s\n\n", r.started.UTC().Format("2006-01-02 15:04 MST"), r.finished.Sub(r.started).Round(time.Second), strings.TrimSpace(r.cfg.command))
	fmt.Fprintf(&b, "Settings: %s.\n\n", r.settings())
	for _, v := range r.versions {
		fmt.Fprintf(&b, "- %s\n", v)
	}
	for _, s := range r.skipped {
		fmt.Fprintf(&b, "- skipped: %s\n", s)
	}
	fmt.Fprintf(&b, "\n## The goals\n\nEach goal of the performance issue, per database: a ratio is decisions per second of the first approach over the second, in the same run (the median of the rounds' ratios); the other rows are one approach's own figure per decision. A verdict in parentheses is for information: that target does not apply to that database.\n\n")
	fmt.Fprintf(&b, "| db | goal | scenario | goroutines | measured | target | verdict |\n|---|---|---|---|---|---|---|\n")
	for _, q := range r.ratios() {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s |\n", q.DB, q.What, q.Scenario, q.Goroutines, q.valuesText(), q.targetText(), q.Verdict())
	}
	fmt.Fprintf(&b, "\n## Chart\n\n![decisions per second at %d goroutines](chart.svg)\n\n", r.ratioGoroutines())
	fmt.Fprintf(&b, "## All cells\n\n")
	fmt.Fprintf(&b, "| %s |\n|", strings.Join(tableHeader, " | "))
	for range tableHeader {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, c := range r.results {
		cells := c.cells()
		for i := range cells {
			cells[i] = mdEscape(cells[i])
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	return b.String()
}

func (r *report) writeFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "RESULTS.md"), []byte(r.markdown()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "chart.svg"), []byte(r.chart()), 0o644)
}
