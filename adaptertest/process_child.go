package adaptertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// processEnv carries a child's instructions; without it ProcessChild skips.
const processEnv = "SLUICE_ADAPTERTEST_PROCESS_CHILD"

const (
	resultPrefix = "adaptertest-child-result: "
	readyLine    = "adaptertest-child-ready"
)

// processNow is the instant every process's clock reads.
var processNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type childSpec struct {
	Target   string            `json:"target"`
	Addr     string            `json:"addr"`
	Tables   map[string]string `json:"tables,omitempty"`
	Prefix   string            `json:"prefix,omitempty"`
	Scenario string            `json:"scenario"`
	Key      string            `json:"key"` // rate-limit key, or an API key's plaintext
}

type childResult struct {
	Admitted int64    `json:"admitted"`
	Errors   []string `json:"errors"`
	// Leased is what the child's limiter held in leases when its
	// decisions were done, before Close returned it.
	Leased int64 `json:"leased,omitempty"`
}

// childDecider is one child's way of deciding: decide makes one decision;
// close, when set, ends it (a limiter's Close); leased, when set, reports
// what it holds in leases.
type childDecider struct {
	decide func() (bool, error)
	close  func() error
	leased func() int64
}

// processScenario is one way of deciding, run the same in every child.
type processScenario struct {
	name    string
	storage bool // on the secondary storage; otherwise on the database
	// decider builds one child's decision function.
	decider func(ctx context.Context, db *core.DB, s driver.SecondaryStorage, key string) (childDecider, error)
}

var processRule = ratelimit.Rule{Window: time.Hour, Max: processLimit}

func limiterScenario(name string, storage bool, opts ...ratelimit.Option) processScenario {
	return processScenario{name: name, storage: storage, decider: func(ctx context.Context, db *core.DB, s driver.SecondaryStorage, key string) (childDecider, error) {
		st := ratelimit.Database(db)
		if storage {
			st = ratelimit.Secondary(s)
		}
		l, err := ratelimit.New(st, append([]ratelimit.Option{ratelimit.WithMaxAttempts(1000),
			ratelimit.WithClock(func() time.Time { return processNow })}, opts...)...)
		if err != nil {
			return childDecider{}, err
		}
		return childDecider{decide: func() (bool, error) {
			d, err := l.Consume(ctx, key, processRule)
			return d.Allowed, err
		}, close: l.Close, leased: l.Leased}, nil
	}}
}

func verifyScenario(name string, storage bool) processScenario {
	return processScenario{name: name, storage: storage, decider: func(ctx context.Context, db *core.DB, s driver.SecondaryStorage, key string) (childDecider, error) {
		m, err := keyManager(db, s, storage)
		if err != nil {
			return childDecider{}, err
		}
		return childDecider{decide: func() (bool, error) {
			r, err := m.Verify(ctx, key)
			return r.Valid, err
		}}, nil
	}}
}

func keyManager(db *core.DB, s driver.SecondaryStorage, storage bool) (*apikey.Manager, error) {
	clock := apikey.WithClock(func() time.Time { return processNow })
	if storage {
		return apikey.NewStorageOnly(s, clock, apikey.WithStoragePrefix("adaptertest-keys:"))
	}
	return apikey.New(db, clock)
}

// readThenWrite is a deliberately broken limiter, for the proof that the
// waves catch one: read, decide, then write without a guard.
var readThenWrite = processScenario{name: "read-then-write", decider: func(ctx context.Context, db *core.DB, _ driver.SecondaryStorage, key string) (childDecider, error) {
	return childDecider{decide: func() (bool, error) {
		row, ok, err := db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", key))
		if err != nil || !ok || row.Int("count") >= processLimit {
			return false, err
		}
		_, _, err = db.Update(ctx, core.ModelRateLimit, []core.Where{core.Eq("key", key)},
			map[string]any{"count": row.Int("count") + 1})
		return err == nil, err
	}}, nil
}}

// storageReadThenWrite is readThenWrite on a secondary storage.
var storageReadThenWrite = processScenario{name: "storage-read-then-write", storage: true, decider: func(ctx context.Context, _ *core.DB, s driver.SecondaryStorage, key string) (childDecider, error) {
	return childDecider{decide: func() (bool, error) {
		v, _, err := s.Get(ctx, key)
		n, _ := strconv.ParseInt(v, 10, 64)
		if err != nil || n >= processLimit {
			return false, err
		}
		return true, s.Set(ctx, key, strconv.FormatInt(n+1, 10), processRule.Window)
	}}, nil
}}

var processScenarios = []processScenario{
	limiterScenario("limiter", false),
	limiterScenario("limiter-write-combining", false, ratelimit.WithWriteCombining()),
	limiterScenario("limiter-better-auth-window", false, ratelimit.WithMode(ratelimit.BetterAuthWindow)),
	limiterScenario("window-roll", false),
	limiterScenario("crash", false),
	verifyScenario("api-key-quota", false),
	verifyScenario("api-key-rate-limit", false),
	limiterScenario("storage-limiter", true),
	verifyScenario("storage-api-key-quota", true),
	verifyScenario("storage-api-key-rate-limit", true),
	readThenWrite,
	storageReadThenWrite,
}

func scenarioNamed(name string) (processScenario, bool) {
	for _, sc := range append(processScenarios, leaseScenarios...) {
		if sc.name == name {
			return sc, true
		}
	}
	return processScenario{}, false
}

// ProcessChild is the body of a child process of [RunProcesses]: call it
// from a test named TestProcessChild ([ChildTest]) in the package that
// calls RunProcesses, with the same targets. Outside a child process it
// skips.
func ProcessChild(t *testing.T, targets ...ProcessTarget) {
	raw := os.Getenv(processEnv)
	if raw == "" {
		t.Skip("the body of RunProcesses's child processes")
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	for _, target := range targets {
		if target.Name == spec.Target {
			out, _ := json.Marshal(runChild(target, spec))
			fmt.Println(resultPrefix + string(out))
			return
		}
	}
	t.Fatalf("no target named %q among the %d given to ProcessChild", spec.Target, len(targets))
}

func runChild(target ProcessTarget, spec childSpec) (res childResult) {
	fail := func(err error) childResult { return childResult{Errors: []string{err.Error()}} }
	ctx := context.Background()
	sc, ok := scenarioNamed(spec.Scenario)
	if !ok {
		return fail(fmt.Errorf("unknown scenario %q", spec.Scenario))
	}
	var (
		db *core.DB
		s  driver.SecondaryStorage
	)
	if sc.storage {
		st, closeIt, err := target.OpenStorage(ctx, spec.Addr, spec.Prefix)
		if err != nil {
			return fail(err)
		}
		defer closeIt()
		s = st
	} else {
		d, closeIt, err := target.OpenDB(ctx, spec.Addr, spec.Tables)
		if err != nil {
			return fail(err)
		}
		defer closeIt()
		db = d
		// Connect before the start, so that the processes race on
		// decisions rather than on dialling.
		if _, err := db.Count(ctx, core.ModelRateLimit); err != nil {
			return fail(err)
		}
	}
	dc, err := sc.decider(ctx, db, s, spec.Key)
	if err != nil {
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
	for range childGoroutines {
		wg.Go(func() {
			for range childTries {
				ok, err := dc.decide()
				mu.Lock()
				switch {
				case err != nil:
					res.Errors = append(res.Errors, err.Error())
				case ok:
					res.Admitted++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if dc.leased != nil {
		res.Leased = dc.leased()
	}
	if dc.close != nil {
		if err := dc.close(); err != nil {
			res.Errors = append(res.Errors, "closing: "+err.Error())
		}
	}
	return res
}

// child is one running child process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	out   strings.Builder // what it printed, for failure messages
}

func (p *processRun) start(t testing.TB, spec childSpec) *child {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+ChildTest+"$", "-test.count=1", "-test.v=false")
	cmd.Env = append(os.Environ(), processEnv+"="+string(raw))
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
	c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// await reads the child's lines until one starting with prefix.
func (c *child) await(t testing.TB, prefix string) string {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("the child exited before %q; it printed:\n%s", prefix, c.out.String())
			}
			c.out.WriteString(line + "\n")
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			t.Fatalf("no %q from the child in 2 minutes; it printed:\n%s", prefix, c.out.String())
		}
	}
}
