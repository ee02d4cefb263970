package sqltest_test

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The plain SQLite DSN test: two processes, each with a pool opened as a
// new user writes it (sql.Open("sqlite", "app.db"), no options, no pool
// limits), race plainPerProcess decisions each on one key.
const (
	plainEnv        = "SLUICE_SQLITE_PLAIN_CHILD" // the database file, in a child
	plainPerProcess = 100
	plainMax        = 150 // of 200 requests: 150 admitted, 50 denied
)

// TestSQLitePlainDSNTwoProcesses: 200 concurrent decisions from two
// operating-system processes on one SQLite file opened with a plain DSN
// get no error and exactly Max admissions. Before the engine took the
// busy timeout, WAL and immediate transactions on itself, such a run got
// SQLITE_BUSY ("contention: gave up after 12 attempts") and 503s.
func TestSQLitePlainDSNTwoProcesses(t *testing.T) {
	if os.Getenv(plainEnv) != "" {
		t.Skip("in a child")
	}
	path := filepath.Join(t.TempDir(), "app.db")
	var children []*exec.Cmd
	var outs []*bufio.Reader
	var ins []*os.File
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSQLitePlainChild$", "-test.v")
		cmd.Env = append(os.Environ(), plainEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = r
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		_ = r.Close()
		children, outs, ins = append(children, cmd), append(outs, bufio.NewReader(stdout)), append(ins, w)
	}
	// Each child opens, creates the tables and starts its goroutines, then
	// says READY; all are released at once.
	for i, out := range outs {
		if line := await(t, out, "READY"); line == "" {
			t.Fatalf("child %d did not get ready", i)
		}
	}
	for _, w := range ins {
		_, _ = w.Write([]byte("go\n"))
		_ = w.Close()
	}
	var admitted, failed int64
	var errs []string
	for i, out := range outs {
		line := await(t, out, "RESULT")
		var a, f int64
		var first string
		if _, err := fmt.Sscanf(line, "RESULT admitted=%d failed=%d", &a, &f); err != nil {
			t.Fatalf("child %d: %q: %v", i, line, err)
		}
		if f > 0 {
			first, _ = out.ReadString('\n')
			errs = append(errs, strings.TrimSpace(first))
		}
		admitted, failed = admitted+a, failed+f
	}
	for i, c := range children {
		if err := c.Wait(); err != nil {
			t.Errorf("child %d: %v", i, err)
		}
	}
	if failed != 0 || admitted != plainMax {
		t.Fatalf("two processes, %d decisions on a plain DSN: %d admitted, %d failed (%q); want %d admitted, none failed",
			2*plainPerProcess, admitted, failed, errs, plainMax)
	}
	// The stored count agrees with the admissions.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored int64
	if err := db.QueryRow(`SELECT count FROM rate_limit WHERE key = 'k'`).Scan(&stored); err != nil || stored != plainMax {
		t.Fatalf("stored count %d, %v; want %d", stored, err, plainMax)
	}
}

// await reads lines from a child until one starts with prefix.
func await(t *testing.T, r *bufio.Reader, prefix string) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
		if err != nil {
			return ""
		}
	}
}

// TestSQLitePlainChild is one process of TestSQLitePlainDSNTwoProcesses.
func TestSQLitePlainChild(t *testing.T) {
	path := os.Getenv(plainEnv)
	if path == "" {
		t.Skip("run by TestSQLitePlainDSNTwoProcesses")
	}
	pool, err := sql.Open("sqlite", path) // as the README leads one to write
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db, err := sluicesql.Open(pool, sluicesql.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(t.Context()); err != nil {
		t.Fatal(err)
	}
	limiter, err := ratelimit.New(ratelimit.Database(db))
	if err != nil {
		t.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Hour, Max: plainMax}
	var admitted, failed atomic.Int64
	var firstErr atomic.Value
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	for range plainPerProcess {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-release
			d, err := limiter.Consume(t.Context(), "k", rule)
			switch {
			case err != nil:
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			case d.Allowed:
				admitted.Add(1)
			}
		}()
	}
	ready.Wait()
	fmt.Println("READY")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	close(release)
	done.Wait()
	fmt.Println("RESULT admitted=" + strconv.FormatInt(admitted.Load(), 10) + " failed=" + strconv.FormatInt(failed.Load(), 10))
	if e, ok := firstErr.Load().(string); ok {
		fmt.Println(e)
	}
}
