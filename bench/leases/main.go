// Command leases measures, from several operating-system processes at
// once, what exact leases (ratelimit.WithLeases) do for one hot key, and
// what SERIALIZABLE costs the limiter, side by side in interleaved rounds:
//
//   - floor: every decision a hand-written guarded UPDATE of one row
//     (count = count + 1 WHERE key = ? AND count < ?) on database/sql;
//   - leases: ratelimit.Limiter.Consume WithLeases(-lease) on the same key;
//   - limiter at READ COMMITTED and at SERIALIZABLE (PostgreSQL, with
//     default_transaction_isolation set per session by the DSN), on the hot
//     key and on uniform keys.
//
// Each cell is -procs processes (this binary run again) of -goroutines
// goroutines deciding for -duration; a round runs every cell once, and the
// figures are the medians of -rounds rounds, with their ratio to the floor
// (or to READ COMMITTED). A limit check then sends each process's share
// of 2×-max decisions on a fresh key with leases: admitted must be at most
// -max and at least -max less what the processes still held in leases,
// and the stored count, once they close, what they admitted.
//
//	go run ./bench/leases -rounds 3 -duration 1s -conns 8   # from the repository root, with SLUICE_POSTGRES_DSN and SLUICE_MYSQL_DSN set
//
// It makes its own table (leases_<pid>) on each server and drops it.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

const childEnv = "SLUICE_LEASES_BENCH_CHILD"

// job is what a child runs.
type job struct {
	Server     string        `json:"server"` // postgres or mysql
	DSN        string        `json:"dsn"`
	Table      string        `json:"table"`
	Cell       string        `json:"cell"` // floor, leases, limiter, uniform
	Key        string        `json:"key"`
	Max        int64         `json:"max"`
	Lease      int64         `json:"lease"`
	Goroutines int           `json:"goroutines"`
	Conns      int           `json:"conns"`    // each process's pool`
	Duration   time.Duration `json:"duration"` // 0: Tries decisions per goroutine instead
	Tries      int           `json:"tries"`
}

// outcome is what a child reports.
type outcome struct {
	Decisions int64         `json:"decisions"`
	Admitted  int64         `json:"admitted"`
	Leased    int64         `json:"leased"`
	Elapsed   time.Duration `json:"elapsed"`
	Err       string        `json:"err,omitempty"`
}

func main() {
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	if raw := os.Getenv(childEnv); raw != "" {
		var j job
		if err := json.Unmarshal([]byte(raw), &j); err != nil {
			log.Fatal(err)
		}
		out, _ := json.Marshal(runChild(j))
		fmt.Println(string(out))
		return
	}
	procs := flag.Int("procs", 4, "processes per cell")
	goroutines := flag.Int("goroutines", 32, "goroutines per process")
	duration := flag.Duration("duration", time.Second, "how long each cell runs per round")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	conns := flag.Int("conns", 8, "connections in each process's pool (the shared servers allow 100 and 151 clients)")
	lease := flag.Int64("lease", 4000, "WithLeases size")
	limit := flag.Int64("max", 40000, "the limit check's Max")
	flag.Parse()
	b := bench{procs: *procs, goroutines: *goroutines, conns: *conns, duration: *duration, rounds: *rounds, lease: *lease, max: *limit}
	fmt.Printf("hot key from %d processes × %d goroutines (%d connections each), %v a cell, medians of %d interleaved rounds, lease size %d\n\n",
		b.procs, b.goroutines, b.conns, b.duration, b.rounds, b.lease)
	for _, srv := range []struct{ name, env string }{{"postgres", "SLUICE_POSTGRES_DSN"}, {"mysql", "SLUICE_MYSQL_DSN"}} {
		dsn := os.Getenv(srv.env)
		if dsn == "" {
			fmt.Printf("%s: %s not set, skipped\n\n", srv.name, srv.env)
			continue
		}
		if err := b.server(srv.name, dsn); err != nil {
			log.Fatalf("%s: %v", srv.name, err)
		}
	}
}

type bench struct {
	procs, goroutines, rounds, conns int
	duration                         time.Duration
	lease, max                       int64
}

// cell is one row of a server's table.
type cell struct {
	name, job string
	dsn       string
	key       string
	rates     []float64
	base      string // the row it is a ratio of
}

func (b bench) server(server, dsn string) error {
	table := fmt.Sprintf("leases_%d", os.Getpid())
	db, _, closeDB, err := open(server, dsn, table, 2)
	if err != nil {
		return err
	}
	defer closeDB()
	if err := db.CreateTables(context.Background()); err != nil {
		return err
	}
	defer dropTable(server, dsn, table)
	cells := []*cell{
		{name: "floor: guarded UPDATE", job: "floor", dsn: dsn, key: "hot-floor"},
		{name: "limiter WithLeases", job: "leases", dsn: dsn, key: "hot-leases", base: "floor: guarded UPDATE"},
		{name: "limiter", job: "limiter", dsn: dsn, key: "hot-limiter", base: "floor: guarded UPDATE"},
	}
	if server == "postgres" {
		ser, err := serializable(dsn)
		if err != nil {
			return err
		}
		cells = append(cells,
			&cell{name: "limiter, SERIALIZABLE", job: "limiter", dsn: ser, key: "hot-serial", base: "limiter"},
			&cell{name: "limiter, uniform keys", job: "uniform", dsn: dsn, key: "u"},
			&cell{name: "limiter, uniform keys, SERIALIZABLE", job: "uniform", dsn: ser, key: "us", base: "limiter, uniform keys"})
	}
	for range b.rounds {
		for _, c := range cells {
			outs, err := b.run(job{Server: server, DSN: c.dsn, Table: table, Cell: c.job, Key: c.key,
				Max: 1 << 50, Lease: b.lease, Goroutines: b.goroutines, Conns: b.conns, Duration: b.duration})
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			var n int64
			var longest time.Duration
			for _, o := range outs {
				n += o.Decisions
				longest = max(longest, o.Elapsed)
			}
			c.rates = append(c.rates, float64(n)/longest.Seconds())
		}
	}
	fmt.Printf("%s\n\n| cell | decisions/s (median) | ratio | rounds |\n|---|---|---|---|\n", server)
	for _, c := range cells {
		ratio := ""
		if c.base != "" {
			for _, o := range cells {
				if o.name == c.base {
					ratio = fmt.Sprintf("%.2f× %s", median(c.rates)/median(o.rates), o.name)
				}
			}
		}
		fmt.Printf("| %s | %.0f | %s | %s |\n", c.name, median(c.rates), ratio, joinRates(c.rates))
	}
	return b.limitCheck(server, dsn, table, db)
}

// limitCheck sends 2×max decisions with leases on a fresh key.
func (b bench) limitCheck(server, dsn, table string, db *core.DB) error {
	key := "limit-check"
	tries := int(2 * b.max / int64(b.procs*b.goroutines))
	outs, err := b.run(job{Server: server, DSN: dsn, Table: table, Cell: "leases", Key: key, Max: b.max,
		Lease: b.lease, Goroutines: b.goroutines, Conns: b.conns, Tries: tries})
	if err != nil {
		return err
	}
	var admitted, leased int64
	for _, o := range outs {
		admitted += o.Admitted
		leased += o.Leased
	}
	row, _, err := db.FindOne(context.Background(), core.ModelRateLimit, core.Eq("key", key))
	if err != nil {
		return err
	}
	verdict := "ok"
	if admitted > b.max || admitted < b.max-leased || row.Int("count") != admitted {
		verdict = "FAIL"
	}
	fmt.Printf("\nlimit check (%s): %d decisions on a limit of %d: admitted %d; held in leases when each process had made its decisions %d "+
		"(then returned by its Close, to the processes still deciding); under-admission %d, %.2f%% of the limit; stored after every Close %d: %s\n\n",
		server, int64(tries*b.procs*b.goroutines), b.max, admitted, leased, b.max-admitted,
		100*float64(b.max-admitted)/float64(b.max), row.Int("count"), verdict)
	if verdict != "ok" {
		return errors.New("the limit check failed")
	}
	return nil
}

// run starts b.procs children on j, releases them together, and collects
// their outcomes.
func (b bench) run(j job) ([]outcome, error) {
	raw, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	type kid struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		lines *bufio.Scanner
	}
	var kids []kid
	defer func() {
		for _, k := range kids {
			_ = k.cmd.Wait()
		}
	}()
	for range b.procs {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		kids = append(kids, kid{cmd, in, bufio.NewScanner(out)})
	}
	for _, k := range kids { // each says ready once connected
		if !k.lines.Scan() || k.lines.Text() != "ready" {
			return nil, fmt.Errorf("a child did not start: %q", k.lines.Text())
		}
	}
	for _, k := range kids {
		if _, err := io.WriteString(k.in, "go\n"); err != nil {
			return nil, err
		}
	}
	var outs []outcome
	for _, k := range kids {
		var o outcome
		if !k.lines.Scan() {
			return nil, errors.New("a child ended without an outcome")
		}
		if err := json.Unmarshal(k.lines.Bytes(), &o); err != nil {
			return nil, err
		}
		if o.Err != "" {
			return nil, errors.New(o.Err)
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// runChild is one process of a cell.
func runChild(j job) (o outcome) {
	db, pool, closeDB, err := open(j.Server, j.DSN, j.Table, j.Conns)
	if err != nil {
		return outcome{Err: err.Error()}
	}
	defer closeDB()
	decide, done, err := decider(db, pool, j)
	if err != nil {
		return outcome{Err: err.Error()}
	}
	if _, err := db.Count(context.Background(), core.ModelRateLimit); err != nil { // connect first
		return outcome{Err: err.Error()}
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return outcome{Err: err.Error()}
	}
	var decisions, admitted atomic.Int64
	var firstErr atomic.Pointer[error]
	start := time.Now()
	var wg sync.WaitGroup
	for g := range j.Goroutines {
		wg.Go(func() {
			for i := 0; j.Duration == 0 && i < j.Tries || j.Duration > 0 && time.Since(start) < j.Duration; i++ {
				ok, err := decide(g, i)
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				decisions.Add(1)
				if ok {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	o = outcome{Decisions: decisions.Load(), Admitted: admitted.Load(), Elapsed: time.Since(start)}
	o.Leased, err = done()
	if e := firstErr.Load(); e != nil {
		err = *e
	}
	if err != nil {
		o.Err = err.Error()
	}
	return o
}

// decider returns a cell's decision and what ends it (a limiter's Close,
// after reading what it holds in leases).
func decider(db *core.DB, pool *sql.DB, j job) (func(g, i int) (bool, error), func() (int64, error), error) {
	ctx := context.Background()
	rule := ratelimit.Rule{Window: time.Hour, Max: j.Max}
	if j.Cell == "floor" {
		if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": j.Key, "count": 0, "lastRequest": time.Now().UnixMilli()}); err != nil &&
			!errors.Is(err, core.ErrConflict) {
			return nil, nil, err
		}
		// The floor: one hand-written guarded UPDATE a decision, on the
		// pool under db.
		t, _ := db.Schema().Table(core.ModelRateLimit)
		q, c := `UPDATE %s SET %s = %s + 1 WHERE %s = $1 AND %s < $2`, func(f string) string { c, _ := t.Column(f); return `"` + c.Name + `"` }
		if j.Server == "mysql" {
			q, c = "UPDATE %s SET %s = %s + 1 WHERE %s = ? AND %s < ?", func(f string) string { c, _ := t.Column(f); return "`" + c.Name + "`" }
		}
		q = fmt.Sprintf(q, t.Name, c("count"), c("count"), c("key"), c("count"))
		return func(int, int) (bool, error) {
			res, err := pool.ExecContext(ctx, q, j.Key, j.Max)
			if err != nil {
				return false, err
			}
			n, err := res.RowsAffected()
			return n == 1, err
		}, func() (int64, error) { return 0, nil }, nil
	}
	var opts []ratelimit.Option
	if j.Cell == "leases" {
		opts = append(opts, ratelimit.WithLeases(j.Lease))
	}
	l, err := ratelimit.New(ratelimit.Database(db), opts...)
	if err != nil {
		return nil, nil, err
	}
	key := func(g, i int) string { return j.Key }
	if j.Cell == "uniform" {
		key = func(g, i int) string { return fmt.Sprintf("%s-%d", j.Key, (g*7919+i)%10000) }
	}
	return func(g, i int) (bool, error) {
			d, err := l.Consume(ctx, key(g, i), rule)
			return d.Allowed, err
		}, func() (int64, error) {
			held := l.Leased()
			return held, l.Close()
		}, nil
}

// open opens a pool of conns connections and a core.DB on table.
func open(server, dsn, table string, conns int) (*core.DB, *sql.DB, func(), error) {
	driver, dialect := "mysql", sluicesql.MySQL
	if server == "postgres" {
		driver, dialect = "pgx", sluicesql.Postgres
	}
	pool, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, nil, err
	}
	pool.SetMaxOpenConns(conns)
	pool.SetMaxIdleConns(conns)
	db, err := sluicesql.Open(pool, dialect, core.WithNaming(core.Naming{Tables: map[string]string{"rateLimit": table}}))
	if err != nil {
		_ = pool.Close()
		return nil, nil, nil, err
	}
	return db, pool, func() { _ = pool.Close() }, nil
}

func dropTable(server, dsn, table string) {
	driver := "mysql"
	if server == "postgres" {
		driver = "pgx"
	}
	if pool, err := sql.Open(driver, dsn); err == nil {
		_, _ = pool.Exec("DROP TABLE " + table)
		_ = pool.Close()
	}
}

// serializable adds default_transaction_isolation=serializable to a
// PostgreSQL URL DSN's startup options.
func serializable(dsn string) (string, error) {
	if !strings.Contains(dsn, "://") {
		return "", errors.New("a PostgreSQL DSN in URL form is needed for the SERIALIZABLE cells")
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "options=-c%20default_transaction_isolation%3Dserializable", nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func joinRates(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%.0f", x))
	}
	return strings.Join(parts, ", ")
}
