// Command galera measures sluice on a MariaDB Galera cluster, side by side
// in one run, as ratios: every cell runs for -duration, the cells of a
// round one after another (in reverse order every other round, so that no
// cell always follows the same one: a cell leaves the cluster's appliers
// and flow control busy for the next), the rounds interleaved, and each
// ratio is the median of the rounds' ratios. -cpuprofile writes the
// client's CPU profile.
//
//	eval "$(DIR=$(mktemp -d) bash scripts/galera/start.sh)"
//	go run ./bench/galera -plain 'root@tcp(127.0.0.1:3306)/test' > bench/results/galera.md
//	bash scripts/galera/stop.sh "$SLUICE_GALERA_DIR"
//
// Cells, with -goroutines callers per node over one pool per node (the
// plain server gets as many callers, over as many pools):
//   - uniform: rate-limit decisions on -keys keys picked at random, through
//     sluice's limiter, and through a hand-written guarded UPDATE on rows
//     made beforehand; the same with the limiter on the plain server;
//   - hot: one key from every node, through the limiter without routing,
//     with route.New, with route.New and write combining, and on the
//     plain server without combining; and the floor of a hot row, a
//     hand-written guarded UPDATE from every caller, on one node (where
//     routing sends the key) and on the plain server.
//
// The log (stderr) gives each cell's errors and what the cluster did: write
// sets committed (the report gives decisions per commit), certification
// failures, transactions aborted by replicated ones, flow-control pauses.
//   - read: a key's row read by hand on a node, plain and causal (SET
//     STATEMENT wsrep_sync_wait=1 FOR …, as the SQL engine reads on Galera).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/core/route"
	"github.com/sluice-go/sluice/gen"
)

var (
	duration   = flag.Duration("duration", 2*time.Second, "how long each cell runs in each round")
	rounds     = flag.Int("rounds", 4, "interleaved rounds (even, so that each order runs as often)")
	goroutines = flag.Int("goroutines", 8, "callers per node")
	keys       = flag.Int("keys", 10000, "keys of the uniform cells")
	dsnList    = flag.String("dsns", os.Getenv("SLUICE_GALERA_DSNS"), "the cluster's nodes, comma-separated")
	plainDSN   = flag.String("plain", os.Getenv("SLUICE_MYSQL_DSN"), "one plain MariaDB server")
	only       = flag.String("cells", "", "run only the cells whose name holds this text (the ratios of cells left out are not reported)")
	cpuProfile = flag.String("cpuprofile", "", "write the client's CPU profile to this file")
)

// cell is one measured workload: op is one decision (or read) by caller g.
type cell struct {
	name string
	op   func(ctx context.Context, g int) error
}

func main() {
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "galera:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "galera:", err)
		os.Exit(1)
	}
}

type target struct {
	pools []*sql.DB
	dbs   []*core.DB // one per pool
	ads   []driver.Adapter
	s     *core.Schema
	table string
}

func open(ctx context.Context, dsns []string, s *core.Schema) (*target, error) {
	t := &target{s: s}
	for i, dsn := range dsns {
		p, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, err
		}
		p.SetMaxOpenConns(*goroutines)
		p.SetMaxIdleConns(*goroutines)
		if i == 0 {
			stmts, err := gen.DDL(s, gen.MySQL)
			if err != nil {
				return nil, err
			}
			for _, q := range stmts {
				if _, err := p.ExecContext(ctx, q); err != nil {
					return nil, fmt.Errorf("%s: %w", q, err)
				}
			}
		}
		a, err := sluicesql.NewDB(ctx, p, sluicesql.MySQL)
		if err != nil {
			return nil, err
		}
		db, err := core.New(a, core.WithSchema(s))
		if err != nil {
			return nil, err
		}
		if _, _, err := db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "-")); err != nil {
			return nil, err
		}
		t.pools, t.dbs, t.ads = append(t.pools, p), append(t.dbs, db), append(t.ads, a)
	}
	tb, _ := s.Table(core.ModelRateLimit)
	t.table = tb.Name
	return t, nil
}

func (t *target) close(ctx context.Context) {
	for _, q := range gen.DropDDL(t.s, gen.MySQL) {
		_, _ = t.pools[0].ExecContext(ctx, q)
	}
	for _, p := range t.pools {
		_ = p.Close()
	}
}

var rule = ratelimit.Rule{Window: time.Hour, Max: 1 << 40}

func limiters(dbs []*core.DB, opts ...ratelimit.Option) ([]*ratelimit.Limiter, error) {
	var ls []*ratelimit.Limiter
	for _, db := range dbs {
		l, err := ratelimit.New(ratelimit.Database(db), opts...)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func decide(ls []*ratelimit.Limiter, key func(g int) string) func(ctx context.Context, g int) error {
	return func(ctx context.Context, g int) error {
		d, err := ls[g%len(ls)].Consume(ctx, key(g), rule)
		if err == nil && !d.Allowed {
			err = fmt.Errorf("denied")
		}
		return err
	}
}

func uniformKey(int) string { return fmt.Sprintf("u%d", rand.IntN(*keys)) }
func hotKey(int) string     { return "hot" }

// routed returns one core.DB per node, each over a Router over every
// node's pool: as many application servers routing by key.
func routed(t *target) ([]*core.DB, error) {
	var dbs []*core.DB
	for range t.ads {
		r, err := route.New(t.ads)
		if err != nil {
			return nil, err
		}
		db, err := core.New(r, core.WithSchema(t.s))
		if err != nil {
			return nil, err
		}
		dbs = append(dbs, db)
	}
	return dbs, nil
}

func run() error {
	ctx := context.Background()
	dsns := strings.Split(*dsnList, ",")
	if *dsnList == "" || *plainDSN == "" {
		return fmt.Errorf("set -dsns (or SLUICE_GALERA_DSNS) and -plain (or SLUICE_MYSQL_DSN)")
	}
	tag := fmt.Sprintf("gb%d", time.Now().UnixNano()%1_000_000)
	naming := core.Naming{Tables: map[string]string{core.ModelRateLimit: "ratelimit_" + tag, core.ModelAPIKey: "apikey_" + tag}}
	s := core.MustSchema(naming)
	cl, err := open(ctx, dsns, s)
	if err != nil {
		return err
	}
	defer cl.close(ctx)
	plainDSNs := make([]string, len(dsns))
	for i := range plainDSNs {
		plainDSNs[i] = *plainDSN
	}
	pl, err := open(ctx, plainDSNs, core.MustSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: "ratelimit_p" + tag, core.ModelAPIKey: "apikey_p" + tag}}))
	if err != nil {
		return err
	}
	defer pl.close(ctx)
	cells, err := buildCells(ctx, cl, pl)
	if err != nil {
		return err
	}
	res, per := measure(ctx, cells, len(dsns)**goroutines, cl.pools)
	report(res, per, len(dsns))
	return nil
}

func buildCells(ctx context.Context, cl, pl *target) ([]cell, error) {
	// The uniform keys' rows exist before the first round, for the
	// hand-written UPDATE and the limiter alike.
	warm, err := limiters(cl.dbs)
	if err != nil {
		return nil, err
	}
	warmPlain, err := limiters(pl.dbs)
	if err != nil {
		return nil, err
	}
	for i := range *keys {
		k := fmt.Sprintf("u%d", i)
		if _, err := warm[0].Consume(ctx, k, rule); err != nil {
			return nil, err
		}
		if _, err := warmPlain[0].Consume(ctx, k, rule); err != nil {
			return nil, err
		}
	}
	// The hand-written write is the limiter's own on a key it has seen: a
	// count in a live window with room. It leaves last_request alone: the
	// rows are the limiter's too, and a floor that moved their window
	// starts made the limiter's next cell miss its remembered starts and
	// read every row again (its rate fell round after round, the floor's
	// held).
	raw := fmt.Sprintf("UPDATE `%s` SET `count` = `count` + 1 WHERE `key` = ? AND `last_request` > ? AND `count` < ?", cl.table)
	sel := fmt.Sprintf("SELECT `id`, `key`, `count`, `last_request` FROM `%s` WHERE `key` = ?", cl.table)
	plainL, _ := limiters(pl.dbs)
	uniL, _ := limiters(cl.dbs)
	hotL, _ := limiters(cl.dbs)
	rdbs, err := routed(cl)
	if err != nil {
		return nil, err
	}
	routedL, _ := limiters(rdbs)
	rdbs2, _ := routed(cl)
	routedCL, _ := limiters(rdbs2, ratelimit.WithWriteCombining())
	hotPlainL, _ := limiters(pl.dbs)
	read := func(causal bool) func(ctx context.Context, g int) error {
		q := sel
		if causal {
			q = "SET STATEMENT wsrep_sync_wait=1 FOR " + sel
		}
		return func(ctx context.Context, g int) error {
			var id, count, last int64
			var key string
			return cl.pools[g%len(cl.pools)].QueryRowContext(ctx, q, uniformKey(g)).Scan(&id, &key, &count, &last)
		}
	}
	return []cell{
		{"uniform/limiter", decide(uniL, uniformKey)},
		{"uniform/guarded UPDATE", func(ctx context.Context, g int) error {
			res, err := cl.pools[g%len(cl.pools)].ExecContext(ctx, raw, uniformKey(g), time.Now().Add(-rule.Window).UnixMilli(), rule.Max)
			if err == nil {
				if n, _ := res.RowsAffected(); n != 1 {
					err = fmt.Errorf("the guarded UPDATE matched %d rows", n)
				}
			}
			return err
		}},
		{"uniform/limiter on one plain server", decide(plainL, uniformKey)},
		{"hot/limiter", decide(hotL, hotKey)},
		{"hot/limiter, route.New", decide(routedL, hotKey)},
		{"hot/limiter, route.New + write combining", decide(routedCL, hotKey)},
		{"hot/limiter on one plain server", decide(hotPlainL, hotKey)},
		{"hot/guarded UPDATE on one node", hotUpdate(cl.pools[:1], cl.table)},
		{"hot/guarded UPDATE on one plain server", hotUpdate(pl.pools, pl.table)},
		{"read/plain", read(false)},
		{"read/causal", read(true)},
	}, nil
}

// hotUpdate is the floor of a hot key: the hand-written guarded UPDATE of
// one row from every caller, over pools (the cluster's first node alone:
// the rate at which one node commits one row's writes, what a routed key
// gets; or the plain server). No decision carries more than one unit, so
// a combined write's decisions per commit times this rate bound the
// routed, combined cell.
func hotUpdate(pools []*sql.DB, table string) func(ctx context.Context, g int) error {
	q := fmt.Sprintf("UPDATE `%s` SET `count` = `count` + 1, `last_request` = ? WHERE `key` = 'hot' AND `count` < ?", table)
	return func(ctx context.Context, g int) error {
		res, err := pools[g%len(pools)].ExecContext(ctx, q, time.Now().UnixMilli(), rule.Max)
		if err == nil {
			if n, _ := res.RowsAffected(); n != 1 {
				err = fmt.Errorf("the guarded UPDATE matched %d rows", n)
			}
		}
		return err
	}
}

// measure runs every cell once per round (odd rounds in reverse order),
// the rounds interleaved, and
// returns each cell's operations per second in each round and, on the
// cluster, its operations per write set committed; it logs every cell's
// errors and the cluster's counters (see wsrep).
func measure(ctx context.Context, cells []cell, callers int, nodes []*sql.DB) (res, per map[string][]float64) {
	res, per = map[string][]float64{}, map[string][]float64{}
	for r := range *rounds {
		order := slices.Clone(cells)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, c := range order {
			if !strings.Contains(c.name, *only) {
				continue
			}
			before := wsrepStatus(ctx, nodes)
			var n, errs atomic.Int64
			var first atomic.Value
			stop := time.Now().Add(*duration)
			var wg sync.WaitGroup
			start := time.Now()
			for g := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(stop) {
						if err := c.op(ctx, g); err != nil {
							errs.Add(1)
							first.CompareAndSwap(nil, err)
							continue
						}
						n.Add(1)
					}
				}()
			}
			wg.Wait()
			ops := float64(n.Load()) / time.Since(start).Seconds()
			res[c.name] = append(res[c.name], ops)
			d := wsrepStatus(ctx, nodes).minus(before)
			perCommit := 0.0
			if d.commits > 0 {
				perCommit = float64(n.Load()) / float64(d.commits)
				per[c.name] = append(per[c.name], perCommit)
			}
			fmt.Fprintf(os.Stderr, "round %d %-45s %8.0f/s errors %d %v | cluster: %d commits (%.1f ops each), %d cert failures, %d brute-force aborts, flow control paused %v\n",
				r, c.name, ops, errs.Load(), first.Load(), d.commits, perCommit, d.certFailures, d.bfAborts, time.Duration(d.pausedNs).Round(time.Millisecond))
		}
	}
	return res, per
}

// wsrep is a sum over the cluster's nodes of the wsrep counters that say
// where a cell's time went: write sets committed locally, certification
// failures, local transactions aborted by replicated ones, and the time
// flow control paused replication.
type wsrep struct{ commits, certFailures, bfAborts, pausedNs int64 }

func (a wsrep) minus(b wsrep) wsrep {
	return wsrep{a.commits - b.commits, a.certFailures - b.certFailures, a.bfAborts - b.bfAborts, a.pausedNs - b.pausedNs}
}

func wsrepStatus(ctx context.Context, nodes []*sql.DB) wsrep {
	var w wsrep
	for _, p := range nodes {
		rows, err := p.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_commits', 'wsrep_local_cert_failures', 'wsrep_local_bf_aborts', 'wsrep_flow_control_paused_ns')")
		if err != nil {
			continue
		}
		for rows.Next() {
			var name string
			var v int64
			if rows.Scan(&name, &v) != nil {
				continue
			}
			switch name {
			case "wsrep_local_commits":
				w.commits += v
			case "wsrep_local_cert_failures":
				w.certFailures += v
			case "wsrep_local_bf_aborts":
				w.bfAborts += v
			case "wsrep_flow_control_paused_ns":
				w.pausedNs += v
			}
		}
		_ = rows.Close()
	}
	return w
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// ratio is the median over the rounds of a's rate ÷ b's.
func ratio(res map[string][]float64, a, b string) float64 {
	var rs []float64
	for i := range res[a] {
		rs = append(rs, res[a][i]/res[b][i])
	}
	return median(rs)
}

func report(res, per map[string][]float64, nodes int) {
	var load string
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(raw))[:3], " ")
	}
	fmt.Printf("# sluice on a MariaDB Galera cluster\n\n")
	fmt.Printf("Run on %s with `go run ./bench/galera %s` (%d nodes on loopback, %d callers per node over one pool per node, %v per cell, %d interleaved rounds, %d uniform keys; %s/%s, %d CPUs, load average %s).\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), strings.Join(os.Args[1:], " "), nodes, *goroutines, *duration, *rounds, *keys, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), load)
	fmt.Printf("| cell | decisions/s (median) | decisions per write set the cluster committed (median) |\n|---|---|---|\n")
	var names []string
	for n := range res {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		pc := "—"
		if per[n] != nil {
			pc = fmt.Sprintf("%.1f", median(per[n]))
		}
		fmt.Printf("| %s | %.0f | %s |\n", n, median(res[n]), pc)
	}
	fmt.Printf("\n| ratio (median of the rounds' ratios) | measured | goal |\n|---|---|---|\n")
	rows := []struct{ what, a, b, goal string }{
		{"uniform keys over the nodes: limiter ÷ hand-written guarded UPDATE", "uniform/limiter", "uniform/guarded UPDATE", "≥ 0.9"},
		{"uniform keys: cluster ÷ one plain server", "uniform/limiter", "uniform/limiter on one plain server", "reported"},
		{"hot key from every node: route.New ÷ without", "hot/limiter, route.New", "hot/limiter", "≥ 2"},
		{"hot key: route.New + write combining ÷ one plain server without combining", "hot/limiter, route.New + write combining", "hot/limiter on one plain server", "≥ 1"},
		{"hot key: without routing ÷ one plain server", "hot/limiter", "hot/limiter on one plain server", "reported"},
		{"hot key: route.New + write combining ÷ the guarded UPDATE of the row on its node", "hot/limiter, route.New + write combining", "hot/guarded UPDATE on one node", "reported"},
		{"hot row's commits: one node ÷ one plain server (hand-written guarded UPDATE)", "hot/guarded UPDATE on one node", "hot/guarded UPDATE on one plain server", "reported"},
		{"a key's read: causal ÷ plain (the cost of wsrep_sync_wait=1)", "read/causal", "read/plain", "reported"},
	}
	for _, r := range rows {
		if res[r.a] == nil || res[r.b] == nil {
			continue
		}
		fmt.Printf("| %s | %.2f | %s |\n", r.what, ratio(res, r.a, r.b), r.goal)
	}
}
