package adaptertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// ProcessTarget is one database or secondary storage that [RunProcesses]
// races on. Its openers run once in the test process and once in every
// child process, which is this test binary run again, and get the
// address (a DSN) the test process read.
type ProcessTarget struct {
	// Name names the target's subtest, and tells a child which target it
	// runs on.
	Name string
	// Addr returns the DSN or address, or skips the test (as
	// [PostgresDSN] does). It is called in the test process only; the
	// children get its answer.
	Addr func(t testing.TB) string
	// OpenDB returns a core.DB on addr whose schema maps each logical
	// model to the physical table named in tables (use
	// core.Naming{Tables: tables}), on a pool of its own, and a function
	// that closes the pool. nil: no database scenarios.
	OpenDB func(ctx context.Context, addr string, tables map[string]string) (db *core.DB, closeDB func(), err error)
	// DropTables, when set, drops the tables a run created.
	DropTables func(ctx context.Context, addr string, tables map[string]string) error
	// OpenStorage returns a secondary storage on addr, on a client of its
	// own, all of them sharing prefix, and a function that closes the
	// client. nil: no storage scenarios.
	OpenStorage func(ctx context.Context, addr, prefix string) (s driver.SecondaryStorage, closeStorage func(), err error)
	// DropStorage, when set, deletes the keys a run stored under prefix.
	DropStorage func(ctx context.Context, addr, prefix string) error
}

// ChildTest is the name of the test that must call [ProcessChild] in a
// package that calls [RunProcesses]: the children run it alone.
const ChildTest = "TestProcessChild"

// The shape of every wave: four processes of eight goroutines, each trying
// four decisions (128 in all) on one key whose limit is 50.
const (
	processCount    = 4
	childGoroutines = 8
	childTries      = 4
	processLimit    = 50
)

// processRun is one RunProcesses call's state in the test process.
type processRun struct {
	target  ProcessTarget
	addr    string
	tables  map[string]string
	prefix  string
	db      *core.DB // the test process's own pool
	storage driver.SecondaryStorage
	has     need // databaseTarget, storageTarget: what the target opens
}

// wave starts the children on key, releases them together, and returns
// how many decisions they admitted. kill ≥ 0 is a child killed with
// SIGKILL right after the release, whose admissions are not known.
func (p *processRun) wave(t testing.TB, scenario, key string, kill int) int64 {
	t.Helper()
	n, _ := p.leaseWave(t, scenario, key, kill)
	return n
}

// leaseWave is wave that also returns what the children held in leases
// when their decisions were done (before their Close returned it).
func (p *processRun) leaseWave(t testing.TB, scenario, key string, kill int) (admitted, leased int64) {
	t.Helper()
	spec := childSpec{Target: p.target.Name, Addr: p.addr, Tables: p.tables, Prefix: p.prefix, Scenario: scenario, Key: key}
	kids := make([]*child, processCount)
	for i := range kids {
		kids[i] = p.start(t, spec)
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
	var n int64
	for i, k := range kids {
		if i == kill {
			continue
		}
		var r childResult
		line := k.await(t, resultPrefix)
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, resultPrefix)), &r); err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Errors {
			t.Errorf("child %d: %s", i, e)
		}
		n += r.Admitted
		leased += r.Leased
	}
	return n, leased
}

func (p *processRun) stored(t testing.TB, key string) int64 {
	t.Helper()
	row, ok, err := p.db.FindOne(t.Context(), core.ModelRateLimit, core.Eq("key", key))
	if err != nil || !ok {
		t.Fatalf("reading the counter of %q: found %v, %v", key, ok, err)
	}
	return row.Int("count")
}

// exact is the check of a wave on a fresh key.
func exact(admitted, stored int64) error {
	if admitted != processLimit || stored != processLimit {
		return fmt.Errorf("%d processes admitted %d of %d decisions and stored %d; want exactly %d both",
			processCount, admitted, processCount*childGoroutines*childTries, stored, processLimit)
	}
	return nil
}

// RunProcesses races decisions on one key from four operating-system
// processes at once, as four servers of one service would, each with its
// own pool or client and its own process-local state (denial cache, write
// combiner, remembered keys), and checks exact totals: 128 decisions on a
// limit of 50 admit exactly 50 and store 50. It runs a subtest per target.
// The children are this test binary run again: the package must also have
// the test [ChildTest] that calls [ProcessChild] with the same targets.
//
// On a database: the rate limiter with its fixed window, with write
// combining, with Better Auth's window, and across a window roll that
// every process sees at once; API-key quota and API-key rate limit; one
// process killed (SIGKILL) as a wave starts, after which the counter is
// whole and a second wave brings it to exactly the limit; and a proof that
// the check catches a read-then-write limiter. On a secondary storage: the
// rate limiter and both API-key budgets in storage-only mode, and the
// same proof.
func RunProcesses(t *testing.T, targets ...ProcessTarget) {
	for _, target := range targets {
		t.Run(target.Name, func(t *testing.T) {
			p := openProcessRun(t, target)
			runCases(t, processCases(), func(t *testing.T, needs need) *processRun {
				t.Helper()
				skipLacking(t, needs, p.has)
				return p
			})
		})
	}
}

// processCase is a case of [RunProcesses].
type processCase = testCase[*processRun]

// processCases are the waves: on the target's database, then on its
// secondary storage. Each proof that the waves can fail is a case of its
// own, run on every target.
func processCases() []processCase {
	const db, storage = databaseTarget, storageTarget
	return []processCase{
		{"limiter", ruleProcessLimiter, db, limiterWave("limiter")},
		{"limiter-write-combining", ruleProcessLimiter, db, limiterWave("limiter-write-combining")},
		{"limiter-better-auth-window", ruleProcessLimiter, db, limiterWave("limiter-better-auth-window")},
		{"window-roll", ruleProcessWindowRoll, db, limiterWave("window-roll")},
		{"api-key-quota", ruleProcessKeys, db, keyWave("api-key-quota", false)},
		{"api-key-rate-limit", ruleProcessKeys, db, keyWave("api-key-rate-limit", false)},
		{"crash", ruleProcessCrash, db, processCrash},
		{"catches-read-then-write", ruleProcessProof, db, catchesReadThenWrite},
		{"storage-limiter", ruleProcessStorageLimiter, storage, storageLimiterWave},
		{"storage-api-key-quota", ruleProcessKeys, storage, keyWave("storage-api-key-quota", true)},
		{"storage-api-key-rate-limit", ruleProcessKeys, storage, keyWave("storage-api-key-rate-limit", true)},
		{"storage-catches-read-then-write", ruleProcessProof, storage, storageCatchesReadThenWrite},
		{"limiter-leases", ruleProcessLeases, db, leaseWave("limiter-leases")},
		{"crash-leases", ruleProcessLeaseCrash, db, leaseCrash},
		{"catches-over-admitting-lease", ruleProcessLeaseProof, db, catchesBrokenLease},
		{"storage-limiter-leases", ruleProcessLeases, storage, leaseWave("storage-limiter-leases")},
	}
}

// The sentences of the contract the waves check.
const (
	ruleProcessLimiter        = "128 decisions from four processes at once on one key with a limit of 50 admit exactly 50, and the stored count is 50"
	ruleProcessWindowRoll     = "on a full window that ended a millisecond before the processes' now, one process resets it and the 128 decisions admit and store exactly 50 in the new window"
	ruleProcessKeys           = "an API key with a quota of 50, or a rate limit of 50 and no quota, verified 128 times from four processes at once, admits exactly 50 and stores remaining 0 or a request count of 50"
	ruleProcessCrash          = "a process killed (SIGKILL) as a wave starts leaves the counter whole: at most the limit and at least what the survivors were told; a second wave admits exactly what is left"
	ruleProcessStorageLimiter = "on a secondary storage, 128 decisions from four processes admit exactly 50 (and store 50 when the storage has a bounded increment)"
	ruleProcessProof          = "the waves can fail: a limiter that reads, decides and writes without a guard is caught over-admitting within five waves"
	ruleProcessLeases         = "with leases of 8, 128 decisions from four processes at once on one key with a limit of 50 admit at most 50 and at least 50 less what the processes held in leases; " +
		"on a database, once they close, their leases are back and the stored count is what they admitted"
	ruleProcessLeaseCrash = "with leases, a process killed (SIGKILL) as a wave starts leaves the counter at most the limit, short by at most the killed process's decisions and one lease; " +
		"a second wave admits what is left, less what its leases hold"
	ruleProcessLeaseProof = "the lease waves can fail: a lease that claims its block whenever the window has a unit left is caught over-admitting"
)

// openProcessRun makes the target's tables and opens the test process's
// own pool (and client) on them, all dropped when t ends.
func openProcessRun(t *testing.T, target ProcessTarget) *processRun {
	p := &processRun{target: target, addr: target.Addr(t)}
	ctx := t.Context()
	tag := fmt.Sprintf("p%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	if target.OpenDB != nil {
		p.has |= databaseTarget
		p.tables = map[string]string{}
		for _, m := range core.BuiltinModels() {
			p.tables[m.Name] = m.Name + "_" + tag
		}
		db, closeDB, err := target.OpenDB(ctx, p.addr, p.tables)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeDB)
		if err := db.CreateTables(ctx); err != nil {
			t.Fatal(err)
		}
		if target.DropTables != nil {
			t.Cleanup(func() {
				if err := target.DropTables(context.Background(), p.addr, p.tables); err != nil {
					t.Errorf("dropping the tables: %v", err)
				}
			})
		}
		p.db = db
	}
	if target.OpenStorage != nil {
		p.has |= storageTarget
		p.prefix = "adaptertest-" + tag + ":"
		s, closeStorage, err := target.OpenStorage(ctx, p.addr, p.prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeStorage)
		if target.DropStorage != nil {
			t.Cleanup(func() {
				if err := target.DropStorage(context.Background(), p.addr, p.prefix); err != nil {
					t.Errorf("deleting the stored keys: %v", err)
				}
			})
		}
		p.storage = s
	}
	return p
}

// limiterWave races the limiter scenario sc on a fresh key.
func limiterWave(sc string) func(testing.TB, *processRun) {
	return func(t testing.TB, p *processRun) {
		key := "processes-" + sc
		if sc == "window-roll" {
			// A full window that ended a millisecond before the processes'
			// now: one of them resets it, the others count in the new one.
			if _, err := p.db.Create(t.Context(), core.ModelRateLimit, map[string]any{"key": key,
				"count": processLimit, "lastRequest": processNow.Add(-processRule.Window).UnixMilli()}); err != nil {
				t.Fatal(err)
			}
		}
		if err := exact(p.wave(t, sc, key, -1), p.stored(t, key)); err != nil {
			t.Error(err)
		}
	}
}

// keyWave races the API-key scenario sc.
func keyWave(sc string, storage bool) func(testing.TB, *processRun) {
	return func(t testing.TB, p *processRun) { p.verifyWave(t, sc, storage) }
}

// processCrash: one process is killed as the wave starts, perhaps inside
// a transaction or a write.
func processCrash(t testing.TB, p *processRun) {
	key := "processes-crash"
	survivors := p.wave(t, "crash", key, 0)
	stored := p.stored(t, key)
	if stored > processLimit || stored < survivors {
		t.Fatalf("after a crash: stored %d, survivors admitted %d, limit %d", stored, survivors, processLimit)
	}
	if second := p.wave(t, "crash", key, -1); second != processLimit-stored {
		t.Errorf("second wave admitted %d, want %d (limit %d − %d stored)", second, processLimit-stored, processLimit, stored)
	}
	if got := p.stored(t, key); got != processLimit {
		t.Errorf("stored after the second wave %d, want %d", got, processLimit)
	}
}

// catchesReadThenWrite is the proof that the waves can fail: a limiter
// that reads, decides and writes without a guard is caught over-admitting
// (lost updates) within five waves, wherever the processes' writes
// interleave.
func catchesReadThenWrite(t testing.TB, p *processRun) {
	for i := range 5 {
		key := fmt.Sprintf("processes-broken-%d", i)
		if _, err := p.db.Create(t.Context(), core.ModelRateLimit, map[string]any{"key": key,
			"count": 0, "lastRequest": processNow.UnixMilli()}); err != nil {
			t.Fatal(err)
		}
		if err := exact(p.wave(t, "read-then-write", key, -1), p.stored(t, key)); err != nil {
			t.Logf("wave %d caught it: %v", i, err)
			return
		}
	}
	t.Error("five waves of a read-then-write limiter passed the check: it cannot catch over-admission here")
}

func storageLimiterWave(t testing.TB, p *processRun) {
	key := "processes-storage-limiter"
	n := p.wave(t, "storage-limiter", key, -1)
	v, ok, err := p.storage.Get(t.Context(), ratelimit.SecondaryPrefix+key)
	if err != nil || !ok {
		t.Fatalf("reading the counter: found %v, %v", ok, err)
	}
	// Without a bounded increment a denied request counts too, so only
	// the admissions are exact then.
	if _, bounded := p.storage.(driver.BoundedIncrementer); n != processLimit || (bounded && v != fmt.Sprint(processLimit)) {
		t.Errorf("%d processes admitted %d and stored %s, want exactly %d", processCount, n, v, processLimit)
	}
}

// storageCatchesReadThenWrite is catchesReadThenWrite on the storage.
func storageCatchesReadThenWrite(t testing.TB, p *processRun) {
	for i := range 5 {
		key := fmt.Sprintf("processes-storage-broken-%d", i)
		n := p.wave(t, "storage-read-then-write", key, -1)
		v, _, err := p.storage.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if stored, _ := strconv.ParseInt(v, 10, 64); n != processLimit || stored != processLimit {
			t.Logf("wave %d caught it: admitted %d, stored %d, limit %d", i, n, stored, processLimit)
			return
		}
	}
	t.Error("five waves of a read-then-write counter passed the check: it cannot catch over-admission here")
}

// verifyWave creates a key with a quota of 50 and no rate limit, or a
// rate limit of 50 and no quota, and has the processes verify it.
func (p *processRun) verifyWave(t testing.TB, scenario string, storage bool) {
	m, err := keyManager(p.db, p.storage, storage)
	if err != nil {
		t.Fatal(err)
	}
	params := apikey.CreateParams{ReferenceID: "processes"}
	quota := strings.HasSuffix(scenario, "quota")
	if quota {
		q := int64(processLimit)
		params.Remaining = &q
		params.RateLimit = &apikey.RateLimit{}
	} else {
		params.RateLimit = &apikey.RateLimit{Enabled: true, Window: processRule.Window, Max: processLimit}
	}
	plain, key, err := m.Create(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if n := p.wave(t, scenario, plain, -1); n != processLimit {
		t.Errorf("%d processes admitted %d verifications, want exactly %d", processCount, n, processLimit)
	}
	after, err := m.Get(t.Context(), key.ID)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case quota && (after.Remaining == nil || *after.Remaining != 0):
		t.Errorf("remaining after the wave %v, want 0", after.Remaining)
	case !quota && after.RequestCount != processLimit:
		t.Errorf("request count after the wave %d, want %d", after.RequestCount, processLimit)
	}
}
