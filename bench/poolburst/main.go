// Command poolburst measures what a connection pool's bound does to a
// burst of rate-limit decisions: waves of n goroutines released at once,
// each making one decision through sluice on database/sql, with
// SetMaxOpenConns unset (database/sql's default: unbounded) and at each
// bound given. For each it prints the decisions that succeeded and failed
// (with the first error of each kind), decisions per second over the
// waves, the slowest decision, and how long goroutines waited for a
// connection. docs/operations.md gives its figures and the command.
//
//	go run ./bench/poolburst -db mysql -dsn 'root@tcp(127.0.0.1:3306)/test' -n 400 -max-open 0,25,50
//
// It makes a table of its own (poolburst_<pid>) and drops it at the end.
// Point it at a server of your own: an unbounded burst takes as many
// connections as it has goroutines, which other clients of a shared
// server then cannot get.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

func main() {
	dbName := flag.String("db", "mysql", "mysql or postgres")
	dsn := flag.String("dsn", "", "the server's DSN (required)")
	n := flag.Int("n", 400, "goroutines per wave")
	waves := flag.Int("waves", 5, "waves per pool setting")
	bounds := flag.String("max-open", "0,25,50", "comma-separated SetMaxOpenConns values; 0 leaves it unset (unbounded)")
	flag.Parse()
	// The driver logs each connection the server resets; the table counts them.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	if *dsn == "" {
		log.Fatal("poolburst: -dsn is required")
	}
	driver, dialect := "mysql", sluicesql.MySQL
	if *dbName == "postgres" {
		driver, dialect = "pgx", sluicesql.Postgres
	} else if *dbName != "mysql" {
		log.Fatalf("poolburst: -db %q: want mysql or postgres", *dbName)
	}
	var limits []int
	for _, s := range strings.Split(*bounds, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 0 {
			log.Fatalf("poolburst: -max-open %q: want non-negative integers", *bounds)
		}
		limits = append(limits, v)
	}
	table := fmt.Sprintf("poolburst_%d", os.Getpid())
	naming := core.WithNaming(core.Naming{Tables: map[string]string{"rateLimit": table}})
	fmt.Printf("%s, %d waves of %d goroutines, one decision each\n\n", *dbName, *waves, *n)
	fmt.Println("| SetMaxOpenConns | decisions ok | failed | decisions/s | slowest | waited for a connection | first error |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for i, maxOpen := range limits {
		sqlDB, err := sql.Open(driver, *dsn)
		if err != nil {
			log.Fatal(err)
		}
		if maxOpen > 0 {
			sqlDB.SetMaxOpenConns(maxOpen)
			sqlDB.SetMaxIdleConns(maxOpen)
		}
		db, err := sluicesql.Open(sqlDB, dialect, naming)
		if err != nil {
			log.Fatal(err)
		}
		if i == 0 {
			if err := db.CreateTables(context.Background()); err != nil {
				log.Fatal(err)
			}
			defer dropTable(driver, *dsn, table)
		}
		r := burst(db, *n, *waves, fmt.Sprintf("w%d", i))
		st := sqlDB.Stats()
		bound := strconv.Itoa(maxOpen)
		if maxOpen == 0 {
			bound = "unset"
		}
		fmt.Printf("| %s | %d | %d | %.0f | %s | %d goroutines, %s in all | %s |\n", bound, r.ok, r.failed,
			float64(r.ok)/r.elapsed.Seconds(), r.slowest.Round(time.Millisecond), st.WaitCount,
			st.WaitDuration.Round(time.Millisecond), r.firstError())
		sqlDB.Close()
	}
}

// result is what one pool setting's waves gave.
type result struct {
	ok, failed int
	elapsed    time.Duration // the waves' wall time, summed
	slowest    time.Duration
	errors     map[string]int // count by the error's first line, shortened
}

func (r result) firstError() string {
	if len(r.errors) == 0 {
		return ""
	}
	var kinds []string
	for k, c := range r.errors {
		kinds = append(kinds, fmt.Sprintf("%d× %s", c, k))
	}
	slices.Sort(kinds)
	return strings.Join(kinds, "; ")
}

// burst runs waves of n goroutines, each released at once to make one
// decision on a key of its own (uniform keys: no row contention, only the
// pool and the server's connections are measured).
func burst(db *core.DB, n, waves int, keyPrefix string) result {
	limiter, err := ratelimit.New(ratelimit.Database(db))
	if err != nil {
		log.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Hour, Max: 1 << 30}
	r := result{errors: map[string]int{}}
	var mu sync.Mutex
	for w := range waves {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				t0 := time.Now()
				_, err := limiter.Consume(context.Background(), fmt.Sprintf("%s:%d:%d", keyPrefix, w, g), rule)
				d := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				r.slowest = max(r.slowest, d)
				if err != nil {
					r.failed++
					r.errors[errorKind(err)]++
					return
				}
				r.ok++
			}()
		}
		t0 := time.Now()
		close(start)
		wg.Wait()
		r.elapsed += time.Since(t0)
	}
	return r
}

// errorKind shortens an error to what identifies its kind: the driver's
// or server's message, without the key and the connection's addresses.
func errorKind(err error) string {
	s := err.Error()
	for _, kind := range []string{"Error 1040: Too many connections", "invalid connection",
		"too many clients already", "connection reset by peer", "connection refused"} {
		if strings.Contains(s, kind) {
			return kind
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline exceeded"
	}
	if _, after, ok := strings.Cut(s, "sluice: "); ok {
		s = after
	}
	if len(s) > 90 {
		s = s[:90] + "…"
	}
	return s
}

func dropTable(driver, dsn, table string) {
	sqlDB, err := sql.Open(driver, dsn)
	if err != nil {
		log.Print(err)
		return
	}
	defer sqlDB.Close()
	if _, err := sqlDB.Exec("DROP TABLE " + table); err != nil {
		log.Printf("poolburst: could not drop %s: %v", table, err)
	}
}
