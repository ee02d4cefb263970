package main

import (
	"fmt"
	"io"
	"math"
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

// ratio is one comparison against a target of the issue.
type ratio struct {
	DB, What string
	Scenario scenario
	Values   []namedValue // one per adapter (or one)
	Target   float64      // 0: information only
	Binding  bool         // the target applies to this backend
}

type namedValue struct {
	Name  string
	Value float64
}

// Min is the worst value, the one held to the target.
func (q ratio) Min() float64 {
	m := math.Inf(1)
	for _, v := range q.Values {
		m = min(m, v.Value)
	}
	return m
}

// Verdict says whether the target is met.
func (q ratio) Verdict() string {
	switch {
	case q.Target == 0:
		return "info"
	case !q.Binding:
		if q.Min() >= q.Target {
			return "(met)"
		}
		return "(missed)"
	case q.Min() >= q.Target:
		return "met"
	default:
		return "MISSED"
	}
}

func (r *report) ratios() []ratio {
	g := r.ratioGoroutines()
	var out []ratio
	dbs := []string{}
	for _, c := range r.results {
		if len(dbs) == 0 || dbs[len(dbs)-1] != c.DB {
			dbs = append(dbs, c.DB)
		}
	}
	perAdapter := func(db string, num kind, den kind, sc, scDen scenario) []namedValue {
		d, ok := r.find(db, den, "", scDen, g)
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
	add := func(q ratio) {
		if len(q.Values) > 0 {
			out = append(out, q)
		}
	}
	for _, db := range dbs {
		if db == "redis" {
			for _, sc := range r.cfg.scenarios {
				n, ok1 := r.find(db, kindRedis, "", sc, g)
				d, ok2 := r.find(db, kindRedisRate, "", sc, g)
				if ok1 && ok2 && d.PerSecond() > 0 {
					add(ratio{DB: db, What: "sluice Redis storage ÷ redis_rate", Scenario: sc, Target: 0.9, Binding: true,
						Values: []namedValue{{"sluice", speedup(n, d)}}})
				}
				if n, ok := r.find(db, kindRedisGCRA, "", sc, g); ok && ok2 && d.PerSecond() > 0 {
					add(ratio{DB: db, What: "sluice Redis GCRA ÷ redis_rate (both GCRA)", Scenario: sc, Target: 0.9, Binding: true,
						Values: []namedValue{{"sluice", speedup(n, d)}}})
				}
			}
			continue
		}
		binding := db == "postgres"
		add(ratio{DB: db, What: "rate limiter ÷ SQL floor", Scenario: uniformKeys, Target: 0.9, Binding: binding,
			Values: perAdapter(db, kindLimiter, kindFloor, uniformKeys, uniformKeys)})
		add(ratio{DB: db, What: "rate limiter ÷ SQL floor", Scenario: hotKey, Target: 0.9, Binding: binding,
			Values: perAdapter(db, kindLimiter, kindFloor, hotKey, hotKey)})
		// The pgx adapter runs on a pool of its own: it is held to the
		// floor on that pool too.
		onlyPgx := func(vs []namedValue) []namedValue {
			return slices.DeleteFunc(vs, func(v namedValue) bool { return v.Name != "pgx" })
		}
		add(ratio{DB: db, What: "rate limiter ÷ SQL floor on pgx's pool", Scenario: uniformKeys, Target: 0.9, Binding: binding,
			Values: onlyPgx(perAdapter(db, kindLimiter, kindPgxFloor, uniformKeys, uniformKeys))})
		add(ratio{DB: db, What: "rate limiter ÷ SQL floor on pgx's pool", Scenario: hotKey, Target: 0.9, Binding: binding,
			Values: onlyPgx(perAdapter(db, kindLimiter, kindPgxFloor, hotKey, hotKey))})
		add(ratio{DB: db, What: "rate limiter ÷ read-then-write reference", Scenario: uniformKeys, Target: 1.5, Binding: binding,
			Values: perAdapter(db, kindLimiter, kindReference, uniformKeys, uniformKeys)})
		add(ratio{DB: db, What: "rate limiter ÷ pessimistic locking", Scenario: hotKey, Target: 2, Binding: binding,
			Values: perAdapter(db, kindLimiter, kindLocking, hotKey, hotKey)})
		add(ratio{DB: db, What: "rate limiter ÷ SQL floor", Scenario: denialStorm, Target: 10, Binding: binding,
			Values: perAdapter(db, kindLimiter, kindFloor, denialStorm, denialStorm)})
		add(ratio{DB: db, What: "rate limiter with write combining ÷ SQL floor", Scenario: hotKey, Target: 10,
			Binding: db == "postgres" || db == "mysql", Values: perAdapter(db, kindCombining, kindFloor, hotKey, hotKey)})
		add(ratio{DB: db, What: "IncrementOne ÷ SQL floor", Scenario: uniformKeys,
			Values: perAdapter(db, kindIncrement, kindFloor, uniformKeys, uniformKeys)})
		add(ratio{DB: db, What: "API-key verify ÷ Better Auth's verification", Scenario: uniformKeys, Target: 2, Binding: binding,
			Values: perAdapter(db, kindAPIKey, kindAPIKeyRef, uniformKeys, uniformKeys)})
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
	if q.Target == 0 {
		return "—"
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
	fmt.Fprintf(w, "\nratios at %d goroutines (targets apply to PostgreSQL and Redis; others in parentheses):\n", r.ratioGoroutines())
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, q := range r.ratios() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\ttarget %s\t%s\n", q.DB, q.What, q.Scenario, q.valuesText(), q.targetText(), q.Verdict())
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
	fmt.Fprintf(&b, "\n## Ratios against the targets\n\nAt %d goroutines, decisions per second of the first over the second, in the same run. The targets apply to PostgreSQL and Redis; the other databases are shown for information, their verdict in parentheses.\n\n", r.ratioGoroutines())
	fmt.Fprintf(&b, "| db | ratio | scenario | measured | target | verdict |\n|---|---|---|---|---|---|\n")
	for _, q := range r.ratios() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", q.DB, q.What, q.Scenario, q.valuesText(), q.targetText(), q.Verdict())
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
