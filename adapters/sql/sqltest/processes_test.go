package sqltest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The tests of this file run decisions in several operating-system
// processes at once, as several servers of one service would: each child
// is this test binary run again (TestProcessChild), with its own pool, its
// own limiter or key manager and its own process-local state (denial
// cache, write combiner, key-state cache). The children connect, report
// ready, and start together when the parent writes a line to each; the
// parent then checks exact totals in the database.

// childEnv carries a child's instructions; without it TestProcessChild
// does nothing.
const childEnv = "SLUICE_TEST_PROCESS_CHILD"

// childSpec is what one child process does.
type childSpec struct {
	Driver     string            `json:"driver"`
	DSN        string            `json:"dsn"`
	Dialect    sluicesql.Dialect `json:"dialect"`
	Tables     map[string]string `json:"tables"`
	Scenario   string            `json:"scenario"`
	Key        string            `json:"key"` // rate-limit key, or API key plaintext
	Max        int64             `json:"max"`
	WindowMS   int64             `json:"windowMs"`
	NowMS      int64             `json:"nowMs"` // the clock every child reads
	Goroutines int               `json:"goroutines"`
	Tries      int               `json:"tries"`
}

// childResult is a child's last line.
type childResult struct {
	Admitted int64    `json:"admitted"`
	Denied   int64    `json:"denied"`
	Errors   []string `json:"errors"`
}

// processNow is the instant every child's clock reads.
var processNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

const (
	processes       = 4
	childGoroutines = 8
	childTries      = 4 // 4 × 8 × 4 = 128 decisions against a limit of 50
	processLimit    = 50
	resultPrefix    = "sluice-child-result: "
	readyLine       = "sluice-child-ready"
)

// TestProcessChild is a child process's body; see childEnv.
func TestProcessChild(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("run by the multi-process tests in a child process")
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	res := runChild(spec)
	out, _ := json.Marshal(res)
	fmt.Println(resultPrefix + string(out))
}

func runChild(spec childSpec) (res childResult) {
	fail := func(err error) childResult { return childResult{Errors: []string{err.Error()}} }
	ctx := context.Background()
	b := backend{driver: spec.Driver, dialect: spec.Dialect}
	sqldb := b.open(nopTB{}, spec.DSN)
	defer sqldb.Close()
	a, err := sluicesql.NewDB(ctx, sqldb, b.dialect)
	if err != nil {
		return fail(err)
	}
	s, err := core.NewSchema(core.Naming{Tables: spec.Tables}, adaptertest.CounterModel())
	if err != nil {
		return fail(err)
	}
	db, err := core.New(a, core.WithSchema(s))
	if err != nil {
		return fail(err)
	}
	now := func() time.Time { return time.UnixMilli(spec.NowMS).UTC() }
	rule := ratelimit.Rule{Window: time.Duration(spec.WindowMS) * time.Millisecond, Max: spec.Max}
	var decide func() (bool, error)
	switch spec.Scenario {
	case "limiter", "window-roll", "limiter-combining", "limiter-betterauth", "crash":
		opts := []ratelimit.Option{ratelimit.WithClock(now), ratelimit.WithMaxAttempts(1000)}
		switch spec.Scenario {
		case "limiter-combining":
			opts = append(opts, ratelimit.WithWriteCombining())
		case "limiter-betterauth":
			opts = append(opts, ratelimit.WithMode(ratelimit.BetterAuthWindow))
		}
		l, err := ratelimit.New(ratelimit.Database(db), opts...)
		if err != nil {
			return fail(err)
		}
		defer l.Close()
		decide = func() (bool, error) {
			d, err := l.Consume(ctx, spec.Key, rule)
			return d.Allowed, err
		}
	case "read-then-write":
		// A deliberately broken limiter, for the proof that these tests
		// catch one: read, decide, then write without a guard.
		decide = func() (bool, error) {
			row, ok, err := db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", spec.Key))
			if err != nil || !ok || row.Int("count") >= spec.Max {
				return false, err
			}
			_, _, err = db.Update(ctx, core.ModelRateLimit, []core.Where{core.Eq("key", spec.Key)},
				map[string]any{"count": row.Int("count") + 1})
			return err == nil, err
		}
	case "apikey-quota", "apikey-ratelimit":
		m, err := apikey.New(db, apikey.WithClock(now))
		if err != nil {
			return fail(err)
		}
		decide = func() (bool, error) {
			r, err := m.Verify(ctx, spec.Key)
			return r.Valid, err
		}
	default:
		return fail(fmt.Errorf("unknown scenario %q", spec.Scenario))
	}
	// Connect before the start, so the children race on decisions, not on
	// dialling.
	if err := sqldb.PingContext(ctx); err != nil {
		return fail(err)
	}
	fmt.Println(readyLine)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fail(fmt.Errorf("waiting for the start: %w", err))
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for range spec.Goroutines {
		wg.Go(func() {
			for range spec.Tries {
				ok, err := decide()
				mu.Lock()
				switch {
				case err != nil:
					res.Errors = append(res.Errors, err.Error())
				case ok:
					res.Admitted++
				default:
					res.Denied++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return res
}

// nopTB lets a child use backend.open, which wants a testing.TB only to
// fail with.
type nopTB struct{ testing.TB }

func (nopTB) Helper()                   {}
func (nopTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (nopTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// child is one running child process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{}
	out   strings.Builder // every line, for failure messages
}

func startChild(t *testing.T, spec childSpec) *child {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessChild$", "-test.count=1", "-test.v=false")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	})
	return c
}

// await reads lines until one starting with prefix, and returns it.
func (c *child) await(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("child exited before %q; its output:\n%s", prefix, c.out.String())
			}
			c.out.WriteString(line + "\n")
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			t.Fatalf("no %q from the child in 2 minutes; its output:\n%s", prefix, c.out.String())
		}
	}
}

// runWave starts n children on spec, releases them together, and returns
// their results. kill, when set, is the index of a child killed with
// SIGKILL right after the release; its result is not awaited.
func runWave(t *testing.T, spec childSpec, n, kill int) []childResult {
	t.Helper()
	kids := make([]*child, n)
	for i := range kids {
		kids[i] = startChild(t, spec)
	}
	for _, k := range kids {
		k.await(t, readyLine)
	}
	for _, k := range kids {
		if _, err := io.WriteString(k.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	if kill >= 0 {
		if err := kids[kill].cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	var results []childResult
	for i, k := range kids {
		if i == kill {
			continue
		}
		line := k.await(t, resultPrefix)
		var r childResult
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, resultPrefix)), &r); err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Errors {
			t.Errorf("child %d: %s", i, e)
		}
		results = append(results, r)
	}
	return results
}

func admitted(rs []childResult) (n int64) {
	for _, r := range rs {
		n += r.Admitted
	}
	return n
}

// processSpec is the spec of a scenario on e.
func processSpec(e *env, scenario, key string) childSpec {
	tables := map[string]string{}
	for _, m := range append(core.BuiltinModels(), adaptertest.CounterModel()) {
		if tb, ok := e.schema.Table(m.Name); ok {
			tables[m.Name] = tb.Name
		}
	}
	return childSpec{Driver: e.b.driver, DSN: e.dsn, Dialect: e.b.dialect, Tables: tables,
		Scenario: scenario, Key: key, Max: processLimit, WindowMS: time.Hour.Milliseconds(),
		NowMS: processNow.UnixMilli(), Goroutines: childGoroutines, Tries: childTries}
}

func storedCount(t *testing.T, e *env, key string) int64 {
	t.Helper()
	row, ok, err := e.db.FindOne(e.ctx, core.ModelRateLimit, core.Eq("key", key))
	if err != nil || !ok {
		t.Fatalf("reading the counter of %q: ok %v, %v", key, ok, err)
	}
	return row.Int("count")
}

// TestProcessesAdmitExactlyTheLimit: four processes, each with its own
// pool and limiter, race 128 decisions on one fresh key of limit 50:
// exactly 50 are admitted and the stored count is 50, with the fixed
// window, Better Auth's window, write combining, and across a window roll
// that all of them see at once.
func TestProcessesAdmitExactlyTheLimit(t *testing.T) {
	for _, b := range []backend{sqliteBackend(), postgresBackend(), mysqlBackend(false)} {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			for _, sc := range []string{"limiter", "limiter-combining", "limiter-betterauth", "window-roll"} {
				t.Run(sc, func(t *testing.T) {
					spec := processSpec(e, sc, "proc-"+sc)
					if sc == "window-roll" {
						// A full window that ended a millisecond before the
						// children's now: one of them resets it, the rest count
						// in the new window.
						if _, err := e.db.Create(e.ctx, core.ModelRateLimit, map[string]any{"key": spec.Key,
							"count": spec.Max, "lastRequest": spec.NowMS - spec.WindowMS}); err != nil {
							t.Fatal(err)
						}
					}
					if err := exact(admitted(runWave(t, spec, processes, -1)), storedCount(t, e, spec.Key)); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

// exact is the check of a wave on a fresh key: exactly the limit
// admitted, and stored.
func exact(admitted, stored int64) error {
	if admitted != processLimit || stored != processLimit {
		return fmt.Errorf("%d processes admitted %d of %d decisions and stored %d, want exactly %d both",
			processes, admitted, processes*childGoroutines*childTries, stored, processLimit)
	}
	return nil
}

// TestProcessCheckCatchesReadThenWrite proves the multi-process check able
// to fail: the same wave on a limiter that reads, decides and writes
// without a guard is caught over-admitting on PostgreSQL, where the four
// processes' statements truly run in parallel.
func TestProcessCheckCatchesReadThenWrite(t *testing.T) {
	e := newEnv(t, postgresBackend())
	for wave := range 5 {
		spec := processSpec(e, "read-then-write", fmt.Sprintf("proc-broken-%d", wave))
		if _, err := e.db.Create(e.ctx, core.ModelRateLimit, map[string]any{"key": spec.Key, "count": 0, "lastRequest": spec.NowMS}); err != nil {
			t.Fatal(err)
		}
		err := exact(admitted(runWave(t, spec, processes, -1)), storedCount(t, e, spec.Key))
		if err != nil {
			t.Logf("wave %d caught the broken limiter: %v", wave, err)
			return
		}
	}
	t.Fatal("five waves of a read-then-write limiter passed the exactness check: it cannot catch over-admission")
}

// TestProcessesSpendAPIKeysExactly: four processes verify one key at once;
// a quota of 50 (no rate limit) or a rate limit of 50 (no quota) admits
// exactly 50 of 128 verifications, and the stored key agrees.
func TestProcessesSpendAPIKeysExactly(t *testing.T) {
	for _, b := range []backend{sqliteBackend(), postgresBackend(), mysqlBackend(false)} {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			m, err := apikey.New(e.db, apikey.WithClock(func() time.Time { return processNow }))
			if err != nil {
				t.Fatal(err)
			}
			for _, sc := range []string{"apikey-quota", "apikey-ratelimit"} {
				t.Run(sc, func(t *testing.T) {
					p := apikey.CreateParams{ReferenceID: "proc"}
					if sc == "apikey-quota" {
						q := int64(processLimit)
						p.Remaining = &q
						p.RateLimit = &apikey.RateLimit{Enabled: false}
					} else {
						p.RateLimit = &apikey.RateLimit{Enabled: true, Window: time.Hour, Max: processLimit}
					}
					plain, key, err := m.Create(e.ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					rs := runWave(t, processSpec(e, sc, plain), processes, -1)
					if got := admitted(rs); got != processLimit {
						t.Errorf("%d processes admitted %d verifications, want exactly %d", processes, got, processLimit)
					}
					after, err := m.Get(e.ctx, key.ID)
					if err != nil {
						t.Fatal(err)
					}
					if sc == "apikey-quota" && (after.Remaining == nil || *after.Remaining != 0) {
						t.Errorf("remaining after the wave = %v, want 0", after.Remaining)
					}
					if sc == "apikey-ratelimit" && after.RequestCount != processLimit {
						t.Errorf("request count after the wave = %d, want %d", after.RequestCount, processLimit)
					}
				})
			}
		})
	}
}

// TestProcessCrashLeavesNoHalfCounter: one of four processes is killed
// (SIGKILL) as the wave starts, perhaps inside a transaction or a write.
// The counter it leaves is whole: at most the limit, at least what the
// survivors were told, and a second wave of fresh processes brings it to
// exactly the limit, admitting exactly what was left.
func TestProcessCrashLeavesNoHalfCounter(t *testing.T) {
	for _, b := range []backend{sqliteBackend(), postgresBackend(), mysqlBackend(false)} {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			spec := processSpec(e, "crash", "proc-crash")
			survivors := admitted(runWave(t, spec, processes, 0))
			stored := storedCount(t, e, spec.Key)
			if stored > processLimit || stored < survivors {
				t.Fatalf("after a crash: stored count %d, survivors admitted %d, limit %d", stored, survivors, processLimit)
			}
			second := admitted(runWave(t, spec, processes, -1))
			if second != processLimit-stored {
				t.Errorf("second wave admitted %d, want %d (limit %d − %d stored)", second, processLimit-stored, processLimit, stored)
			}
			if got := storedCount(t, e, spec.Key); got != processLimit {
				t.Errorf("stored count after the second wave %d, want %d", got, processLimit)
			}
		})
	}
}
