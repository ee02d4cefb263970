// Command bench runs sluice side by side with the hand-written floor (one
// guarded UPDATE per decision), the reference read-then-write algorithm,
// pessimistic locking and go-redis/redis_rate, in one process against the
// same servers, and prints one comparison table. It also writes the table
// as Markdown (RESULTS.md) and a chart (chart.svg) into -out.
//
// From the repository root:
//
//	go run ./bench                # the full run
//	go run ./bench -quick         # a small run, as CI does (bench/quick.sh)
//
// The servers come from SLUICE_POSTGRES_DSN, SLUICE_MYSQL_DSN and
// SLUICE_REDIS_ADDR; SQLite runs in a temporary file. A server that is not
// configured is skipped, unless CI=true. The exit status is 1 when any
// correctness check fails (a limit exceeded, a count lost, an error).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is what the flags choose.
type config struct {
	quick       bool
	rounds      int
	cpuProfile  string
	asyncCommit bool
	only        []string   // approach name filters; empty: all
	scenarios   []scenario // the scenarios to run
	duration    time.Duration
	goroutines  []int
	dbs         []string
	out         string
	keys        int
	conns       int
	sqliteConns int
	ci          bool
	command     string // as shown in the report
}

var allDBs = []string{"postgres", "mysql", "sqlite", "redis", "redis-cluster"}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "a small run for CI: 32 goroutines, short cells, 1000 keys")
	duration := fs.Duration("duration", time.Second, "measured time of each cell (quick: 100ms)")
	gs := fs.String("goroutines", "1,8,32,64", "goroutine counts (quick: 32)")
	dbs := fs.String("db", strings.Join(allDBs, ","), "backends to run: postgres, mysql, sqlite, redis, redis-cluster")
	out := fs.String("out", defaultOut(), "directory for RESULTS.md and chart.svg; empty for none")
	keys := fs.Int("keys", 10000, "keys of the uniform scenario (quick: 1000)")
	conns := fs.Int("conns", 64, "connection pool size for MariaDB and Redis, and for PostgreSQL up to 64 (pgx has a pool of its own there, of at most 32)")
	sqliteConns := fs.Int("sqlite-conns", 8, "connection pool size for SQLite")
	async := fs.Bool("async-commit", false, "commit without waiting for the disk: synchronous_commit=off on PostgreSQL, synchronous=NORMAL on SQLite (MariaDB unchanged: its setting is global)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run (this process only) to this file")
	rounds := fs.Int("rounds", 1, "measure each cell this many times, interleaving the approaches, and keep the median (steadier on a loaded machine)")
	only := fs.String("only", "", "run only the approaches whose name contains one of these comma-separated words (for rerunning key cells)")
	scs := fs.String("scenarios", "", "run only these scenarios: hot, uniform, denial, cold (default all)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg := config{
		quick: *quick, duration: *duration, out: *out, keys: *keys,
		conns: *conns, sqliteConns: *sqliteConns, asyncCommit: *async, cpuProfile: *cpuProfile, rounds: *rounds, ci: os.Getenv("CI") == "true",
		command: "go run ./bench " + strings.Join(args, " "),
	}
	if cfg.quick {
		if !set["duration"] {
			cfg.duration = 100 * time.Millisecond
		}
		if !set["goroutines"] {
			*gs = "32"
		}
		if !set["keys"] {
			cfg.keys = 1000
		}
	}
	for _, w := range strings.Split(*only, ",") {
		if w = strings.TrimSpace(w); w != "" {
			cfg.only = append(cfg.only, w)
		}
	}
	cfg.scenarios = scenarios
	if *scs != "" {
		cfg.scenarios = nil
		for _, w := range strings.Split(*scs, ",") {
			var found bool
			for _, sc := range scenarios {
				if strings.HasPrefix(string(sc), strings.TrimSpace(w)) {
					cfg.scenarios = append(cfg.scenarios, sc)
					found = true
				}
			}
			if !found {
				return config{}, fmt.Errorf("-scenarios: unknown scenario %q (want hot, uniform, denial or cold)", w)
			}
		}
	}
	for _, f := range strings.Split(*gs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return config{}, fmt.Errorf("-goroutines: %q is not a positive count", f)
		}
		cfg.goroutines = append(cfg.goroutines, n)
	}
	for _, d := range strings.Split(*dbs, ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		if !slices.Contains(allDBs, d) {
			return config{}, fmt.Errorf("-db: unknown backend %q (want some of %s)", d, strings.Join(allDBs, ", "))
		}
		cfg.dbs = append(cfg.dbs, d)
	}
	switch {
	case len(cfg.dbs) == 0:
		return config{}, errors.New("-db: no backend")
	case cfg.duration <= 0:
		return config{}, errors.New("-duration must be positive")
	case cfg.rounds < 1:
		return config{}, errors.New("-rounds must be at least 1")
	case cfg.keys < 1:
		return config{}, errors.New("-keys must be at least 1")
	case cfg.conns < 1 || cfg.sqliteConns < 1:
		return config{}, errors.New("-conns and -sqlite-conns must be at least 1")
	}
	return cfg, nil
}

// defaultOut is bench/results from the repository root, results from bench/.
func defaultOut() string {
	if _, err := os.Stat(filepath.Join("bench", "go.mod")); err == nil {
		return filepath.Join("bench", "results")
	}
	return "results"
}

func main() {
	os.Exit(mainErr(os.Args[1:], os.Stdout, os.Stderr))
}

func mainErr(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 2
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	rep, err := run(ctx, cfg, newProgress(stderr))
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	rep.writeText(stdout)
	if cfg.out != "" {
		if err := rep.writeFiles(cfg.out); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nwrote %s and %s\n", filepath.Join(cfg.out, "RESULTS.md"), filepath.Join(cfg.out, "chart.svg"))
	}
	if n := rep.failures(); n > 0 {
		fmt.Fprintf(stdout, "\nFAIL: %d correctness check(s) failed\n", n)
		return 1
	}
	return 0
}

// run opens each backend in turn, checks every approach's limit, measures
// every cell, and closes the backend before the next.
func run(ctx context.Context, cfg config, prog *progress) (*report, error) {
	rep := &report{cfg: cfg, started: time.Now()}
	runID := fmt.Sprintf("%d_%d", time.Now().Unix()%1000000, rand.IntN(1000))
	env := map[string]string{
		"postgres": "SLUICE_POSTGRES_DSN",
		"mysql":    "SLUICE_MYSQL_DSN",
		"redis":    "SLUICE_REDIS_ADDR",
		// the comma-separated addresses of a Redis Cluster's nodes
		"redis-cluster": "SLUICE_REDIS_CLUSTER_ADDRS",
	}
	type planned struct{ name, dsn string }
	var plan []planned
	cells := 0
	for _, name := range cfg.dbs {
		dsn := ""
		if v, ok := env[name]; ok {
			dsn = os.Getenv(v)
			if dsn == "" {
				if cfg.ci {
					return nil, fmt.Errorf("%s: %s is not set and CI=true", name, v)
				}
				rep.skipped = append(rep.skipped, fmt.Sprintf("%s (%s not set)", name, v))
				continue
			}
		}
		plan = append(plan, planned{name, dsn})
		cells += len(cfg.filter(approachNames(name))) * len(cfg.scenarios) * len(cfg.goroutines)
	}
	prog.total = cells
	for _, p := range plan {
		prog.status(fmt.Sprintf("%s: setting up", p.name))
		var (
			b   *backend
			err error
		)
		if strings.HasPrefix(p.name, "redis") {
			b, err = redisBackend(ctx, p.name, p.dsn, cfg, runID)
		} else {
			b, err = sqlBackend(ctx, p.name, p.dsn, cfg, runID)
		}
		if err != nil {
			return nil, err
		}
		err = runBackend(ctx, b, cfg, prog, rep)
		b.close()
		if err != nil {
			return nil, err
		}
	}
	prog.done()
	rep.finished = time.Now()
	return rep, nil
}

func runBackend(ctx context.Context, b *backend, cfg config, prog *progress, rep *report) error {
	rep.versions = append(rep.versions, fmt.Sprintf("%s: %s", b.name, b.version))
	limitCheck := map[string]string{}
	var names []string
	for _, a := range b.approaches {
		names = append(names, a.name)
	}
	keep := cfg.filter(names)
	b.approaches = slices.DeleteFunc(b.approaches, func(a *approach) bool { return !slices.Contains(keep, a.name) })
	for _, a := range b.approaches {
		prog.status(fmt.Sprintf("%s: limit check, %s", b.name, a.name))
		if msg := burstCheck(ctx, a); msg != "" {
			limitCheck[a.name] = "FAIL: limit check: " + msg
		}
	}
	for _, sc := range cfg.scenarios {
		for _, g := range cfg.goroutines {
			// Rounds interleave the approaches, so that a change in the
			// machine's load falls on all of them alike, and each round
			// starts one approach further on, so that no approach always
			// runs in the same place of a round (the first after a long
			// idle spell of its pool, or the last).
			approaches := b.approaches
			if sc == coldKeys {
				approaches = slices.DeleteFunc(slices.Clone(approaches), func(a *approach) bool { return !a.cold })
			}
			runs := make([][]result, len(approaches))
			for round := range cfg.rounds {
				for j := range approaches {
					i := (j + round) % len(approaches)
					a := approaches[i]
					if err := ctx.Err(); err != nil {
						return err
					}
					if round == 0 {
						prog.cell(b.name, sc, g, a.name)
					} else {
						prog.again(b.name, sc, g, a.name, round+1)
					}
					runs[i] = append(runs[i], runCell(ctx, b, a, sc, g, cfg.duration))
				}
			}
			for i, a := range approaches {
				r := medianOf(runs[i])
				if msg, bad := limitCheck[a.name]; bad {
					if r.OK {
						r.Check = msg
					} else {
						r.Check += "; " + msg
					}
					r.OK = false
				}
				prog.result(r)
				rep.results = append(rep.results, r)
			}
		}
	}
	return nil
}

// filter keeps the names that -only selects.
func (cfg config) filter(names []string) []string {
	if len(cfg.only) == 0 {
		return names
	}
	var out []string
	for _, n := range names {
		for _, w := range cfg.only {
			if strings.Contains(n, w) {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// approachNames lists the approaches of a backend, in the order they run.
func approachNames(db string) []string {
	if strings.HasPrefix(db, "redis") {
		return []string{redisSluiceName, redisRateName, redisSluiceGCRAName, redisSluiceSlidingName, redisUluleName, redisFloorName, redisAloneName}
	}
	names := []string{floorName}
	if db == "postgres" {
		names = append(names, pgxFloorName)
	}
	names = append(names, referenceName, lockingName, betterAuthName, handVerifyName)
	for _, suffix := range []string{incrementSuffix, limiterSuffix, gcraSuffix, slidingSuffix, combiningSuffix, verifySuffix} {
		for _, o := range ormNames {
			if (suffix == combiningSuffix || suffix == gcraSuffix || suffix == slidingSuffix) && o != "sql" {
				continue // combining happens above the adapter: one adapter shows it
			}
			if o == "pgx" && db != "postgres" {
				continue // pgx speaks PostgreSQL only
			}
			names = append(names, o+suffix)
		}
	}
	return names
}
