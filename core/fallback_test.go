package core_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/memory"
)

// decrement is the guarded decrement of the race tests: take one unit of
// the counter only while some are left.
var decrement = core.IncrementRequest{
	Model:     core.ModelRateLimit,
	Where:     []core.Where{core.Eq("key", "k"), core.Gt("count", 0)},
	Increment: map[string]int64{"count": -1},
}

// racePath is one way IncrementOne can do its work in TestFallbackRace.
type racePath struct {
	name       string
	db         func(t *testing.T, m *memory.Memory) *core.DB
	native     bool
	increments func() int64 // native IncrementOne calls, or nil when not observable
	txs        func() int64 // transactions, or nil when not observable
}

// racePaths returns the paths of TestFallbackRace, each counting the calls
// of the adapter its db function wraps around the memory store.
func racePaths() []racePath {
	var c *txCounter
	var fallback, native *spy
	return []racePath{
		{name: "adapter without IncrementOne", db: func(t *testing.T, m *memory.Memory) *core.DB {
			c = &txCounter{Adapter: m.WithoutIncrementOne()}
			return mustNew(t, c)
		}, txs: func() int64 { return c.transactions.Load() }},
		{name: "WithFallback", db: func(t *testing.T, m *memory.Memory) *core.DB {
			fallback = &spy{Memory: m}
			return mustNew(t, fallback, core.WithFallback())
		}, increments: func() int64 { return fallback.increments.Load() }, txs: func() int64 { return fallback.transactions.Load() }},
		{name: "native", native: true, db: func(t *testing.T, m *memory.Memory) *core.DB {
			native = &spy{Memory: m}
			return mustNew(t, native)
		}, increments: func() int64 { return native.increments.Load() }, txs: func() int64 { return native.transactions.Load() }},
	}
}

// TestFallbackRace releases 64 goroutines at once on a counter of 10: exactly
// 10 take a unit and the counter ends at 0, whichever path does the work.
func TestFallbackRace(t *testing.T) {
	const callers, start = 64, 10
	for _, p := range racePaths() {
		t.Run(p.name, func(t *testing.T) {
			db := p.db(t, memory.New())
			if db.NativeIncrement() != p.native {
				t.Fatalf("NativeIncrement() = %v, want %v", db.NativeIncrement(), p.native)
			}
			r := raceDecrement(t, db, callers, start)
			checkRaceOutcome(t, r, start)
			checkRaceWork(t, p, r, callers)
		})
	}
}

// checkRaceOutcome checks that exactly start callers of a race on a counter
// of start took a unit, each seeing its own write, and nothing else failed.
func checkRaceOutcome(t *testing.T, r raceResult, start int64) {
	t.Helper()
	if r.taken != start {
		t.Errorf("%d callers took a unit, want exactly %d", r.taken, start)
	}
	if r.final != 0 {
		t.Errorf("final count %d, want 0", r.final)
	}
	if r.failed != 0 {
		t.Errorf("%d calls failed with an error other than ErrContention", r.failed)
	}
	if r.badRow != nil {
		t.Errorf("a winner saw the row %v", r.badRow)
	}
	// Each winner gets back the row as its own write left it.
	for n := range start {
		if r.seen[n] != 1 {
			t.Errorf("%d winners saw count %d, want exactly 1", r.seen[n], n)
		}
	}
}

// checkRaceWork checks that the race's callers went the way of path p: one
// native IncrementOne each and no transaction, or at least one fallback
// transaction each and no native IncrementOne.
func checkRaceWork(t *testing.T, p racePath, r raceResult, callers int64) {
	t.Helper()
	if p.native {
		if got := p.increments(); got != callers {
			t.Errorf("%d native IncrementOne calls, want %d", got, callers)
		}
		if r.contended != 0 || p.txs() != 0 {
			t.Errorf("native path: %d contention errors, %d transactions", r.contended, p.txs())
		}
		return
	}
	if p.increments != nil && p.increments() != 0 {
		t.Errorf("the native IncrementOne ran %d times under the fallback", p.increments())
	}
	// Each caller runs at least one transaction; losers run more.
	if got := p.txs(); got < callers {
		t.Errorf("%d fallback transactions for %d callers", got, callers)
	}
	t.Logf("%d taken, %d missed, %d gave up with ErrContention, %d transactions",
		r.taken, r.missed, r.contended, p.txs())
}

// raceResult is what raceDecrement observed.
type raceResult struct {
	taken, missed, contended, failed int64
	final                            int64         // the counter after the race
	badRow                           core.Row      // a winner's row that cannot be right, if any
	seen                             map[int64]int // count after the write → winners who saw it
}

// raceDecrement creates a counter at start and releases callers goroutines
// at once on the guarded decrement.
func raceDecrement(t *testing.T, db *core.DB, callers int, start int64) raceResult {
	t.Helper()
	ctx := context.Background()
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k", "count": start})
	var taken, missed, contended, failed atomic.Int64
	var badRow atomic.Value
	var mu sync.Mutex
	seen := map[int64]int{}
	testrace.Release(callers, func(int) {
		row, ok, err := db.IncrementOne(ctx, decrement)
		switch {
		case errors.Is(err, core.ErrContention):
			contended.Add(1)
		case err != nil:
			failed.Add(1)
			t.Errorf("IncrementOne: %v", err)
		case ok:
			taken.Add(1)
			n := row.Int("count")
			if n < 0 || n >= start || row.Text("key") != "k" {
				badRow.Store(row)
			}
			mu.Lock()
			seen[n]++
			mu.Unlock()
		default:
			missed.Add(1)
		}
	})
	r := raceResult{taken: taken.Load(), missed: missed.Load(), contended: contended.Load(), failed: failed.Load(), seen: seen}
	if got := r.taken + r.missed + r.contended + r.failed; got != int64(callers) {
		t.Errorf("%d outcomes for %d callers", got, callers)
	}
	r.final = mustFind(t, db, core.ModelRateLimit, core.Eq("key", "k")).Int("count")
	r.badRow, _ = badRow.Load().(core.Row)
	return r
}

// naive is a deliberately broken IncrementOne: it reads the row, then
// writes the value read plus the delta by primary key, with no guard. It
// proves that raceDecrement can see a lost update.
type naive struct{ *memory.Memory }

func (n naive) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	cur, err := n.Memory.FindOne(ctx, t, where)
	if err != nil || cur == nil {
		return nil, err
	}
	runtime.Gosched()
	write := append([]driver.Assignment(nil), set...)
	for _, d := range inc {
		write = append(write, driver.Assignment{Column: d.Column, Value: cur[d.Column].(int64) + d.By})
	}
	pk := t.PrimaryKey().Name
	return n.Memory.Update(ctx, t, cols(core.Eq(pk, cur[pk])), write)
}

// TestRaceHarnessCatchesALostUpdate runs the race against the naive
// adapter until it over-admits: a race test that cannot fail proves nothing.
func TestRaceHarnessCatchesALostUpdate(t *testing.T) {
	const tries = 50
	for i := range tries {
		db := mustNew(t, naive{memory.New()})
		if r := raceDecrement(t, db, 64, 10); r.taken != 10 || r.final != 0 {
			t.Logf("try %d: the naive adapter let %d callers through, final count %d", i+1, r.taken, r.final)
			return
		}
	}
	t.Fatalf("in %d tries the race never caught the naive adapter's lost updates", tries)
}

// losing is an adapter on which the fallback always loses: FindOne finds the
// row, and the guarded UpdateMany always reports that nothing matched, as if
// another writer always got there first.
type losing struct {
	driver.Adapter // the memory store holding the row
	attempts       atomic.Int64
	updates        atomic.Int64
	cancelAt       int64 // cancel ctx during this update; 0 for never
	cancel         context.CancelFunc
}

func (l *losing) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	l.attempts.Add(1)
	return fn(ctx, l)
}

func (l *losing) UpdateMany(context.Context, *driver.Table, []driver.Where, []driver.Assignment) (int64, error) {
	if n := l.updates.Add(1); n == l.cancelAt {
		l.cancel()
	}
	return 0, nil
}

func newLosing(t *testing.T) (*losing, *core.DB) {
	t.Helper()
	m := memory.New()
	mustCreate(t, mustNew(t, m), core.ModelRateLimit, map[string]any{"key": "k", "count": 10})
	l := &losing{Adapter: m}
	return l, mustNew(t, l)
}

// TestFallbackContention exhausts the retry budget on an adapter that always
// loses: the call gives up with ErrContention after exactly FallbackAttempts
// transactions, changes nothing, and its pauses stay within FallbackMaxWait.
func TestFallbackContention(t *testing.T) {
	l, db := newLosing(t)
	if db.NativeIncrement() {
		t.Fatal("the losing adapter should use the fallback")
	}
	req := decrement
	req.Set = map[string]any{"lastRequest": 99}
	start := time.Now()
	_, ok, err := db.IncrementOne(context.Background(), req)
	elapsed := time.Since(start)
	if ok || !errors.Is(err, core.ErrContention) {
		t.Fatalf("IncrementOne = %v, %v; want ErrContention", ok, err)
	}
	if a, u := l.attempts.Load(), l.updates.Load(); a != core.FallbackAttempts || u != core.FallbackAttempts {
		t.Errorf("%d transactions and %d guarded writes, want exactly %d of each", a, u, core.FallbackAttempts)
	}
	// The transactions on the memory store take microseconds; a second
	// covers them and a slow, shared machine.
	if limit := core.FallbackMaxWait + time.Second; elapsed > limit {
		t.Errorf("giving up took %v, more than the documented bound %v plus a second", elapsed, core.FallbackMaxWait)
	}
	t.Logf("gave up after %d attempts in %v (bound on the pauses: %v)", core.FallbackAttempts, elapsed, core.FallbackMaxWait)
	wrappedOnce(t, err, "IncrementOne", core.ModelRateLimit)
	if want := fmt.Sprintf("%d times", core.FallbackAttempts); !strings.Contains(err.Error(), "contention") || !strings.Contains(err.Error(), want) {
		t.Errorf("message %q should say contention after %s", err, want)
	}
	row := mustFind(t, db, core.ModelRateLimit, core.Eq("key", "k"))
	if row.Int("count") != 10 || row.Int("lastRequest") != 0 {
		t.Errorf("row changed after contention: %v", row)
	}
}

// burstAdapters are the fallback paths the burst tests run on, both on the
// memory store's transactions: one yields to the scheduler before every read
// and write, the other waits a little there, as a round trip to a server
// would. Either way the read-then-write windows of concurrent calls overlap
// and most attempts lose. With the former budget (5 attempts, pauses of at
// most 8 ms) 133 and 191 of the 320 calls of TestFallbackBurst gave up with
// ErrContention on these two paths.
var burstAdapters = map[string]func(m *memory.Memory) driver.Adapter{
	"yielding": func(m *memory.Memory) driver.Adapter { return &txCounter{Adapter: m.WithoutIncrementOne()} },
	"round trips": func(m *memory.Memory) driver.Adapter {
		return roundTrips{m.WithoutIncrementOne(), 100 * time.Microsecond}
	},
}

// TestFallbackBurst releases 64 goroutines at once on a counter of 64, each
// taking one unit through the fallback with a generous deadline: every call
// must get its unit (at most 1% may give up with ErrContention), and the
// counter must end at exactly 0.
func TestFallbackBurst(t *testing.T) {
	const callers, rounds = 64, 5
	for name, adapter := range burstAdapters {
		t.Run(name, func(t *testing.T) {
			var taken, contended int64
			for range rounds {
				db := mustNew(t, adapter(memory.New()))
				if db.NativeIncrement() {
					t.Fatal("the burst must run through the fallback")
				}
				r := raceDecrement(t, db, callers, callers)
				if r.failed != 0 || r.missed != 0 {
					t.Errorf("%d calls failed and %d found nothing to take, want 0 and 0", r.failed, r.missed)
				}
				if r.final != callers-r.taken {
					t.Errorf("%d units taken but the counter went from %d to %d", r.taken, callers, r.final)
				}
				taken += r.taken
				contended += r.contended
			}
			calls := int64(callers * rounds)
			t.Logf("%d of %d calls took their unit, %d gave up with ErrContention", taken, calls, contended)
			if contended*100 > calls {
				t.Errorf("%d of %d calls gave up with ErrContention, more than 1%%", contended, calls)
			}
		})
	}
}

// TestFallbackBurstDeadline runs the same burst with a deadline too short
// for it: every call ends with its unit or with the context's error rather
// than ErrContention, no call begins another attempt once the deadline has
// passed (one already begun may finish), and the counter still agrees with
// the units taken.
func TestFallbackBurstDeadline(t *testing.T) {
	const callers = 64
	const timeout = 5 * time.Millisecond
	for name, adapter := range burstAdapters {
		t.Run(name, func(t *testing.T) {
			var late atomic.Int64
			db := mustNew(t, lateBegins{adapter(memory.New()), &late})
			mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k", "count": callers})
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			deadline, _ := ctx.Deadline()
			var taken, expired, worst atomic.Int64
			testrace.Release(callers, func(int) {
				_, ok, err := db.IncrementOne(ctx, decrement)
				over := int64(time.Since(deadline))
				for w := worst.Load(); over > w && !worst.CompareAndSwap(w, over); w = worst.Load() {
				}
				switch {
				case err == nil && ok:
					taken.Add(1)
				case errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, core.ErrContention):
					expired.Add(1)
				default:
					t.Errorf("IncrementOne = %v, %v; want the unit or context.DeadlineExceeded", ok, err)
				}
			})
			if final := mustFind(t, db, core.ModelRateLimit).Int("count"); final != callers-taken.Load() {
				t.Errorf("%d units taken but the counter went from %d to %d", taken.Load(), callers, final)
			}
			// A call checks its context before each attempt, so at most the
			// attempt whose check just beat the deadline begins after it: one
			// per call. Counting attempts, unlike timing the calls, holds
			// however long a busy machine leaves a goroutine unscheduled.
			if n := late.Load(); n > callers {
				t.Errorf("%d attempts began after the deadline, more than one per call: calls went on retrying", n)
			}
			// A call that went on pausing without heeding its context would
			// run for up to FallbackMaxWait (about 3 s); the margin absorbs
			// the scheduler of a machine busy with other tests under -race.
			if w := time.Duration(worst.Load()); w > time.Second {
				t.Errorf("the last call ended %v after the deadline", w)
			}
			if expired.Load() == 0 {
				t.Errorf("no call ran out of time: the deadline of %v did not cut the burst short, so the test proves nothing", timeout)
			}
			t.Logf("%d took their unit, %d ended with the deadline, the last %v after it", taken.Load(), expired.Load(), time.Duration(worst.Load()))
		})
	}
}

// lateBegins counts the transactions begun with a context already done.
type lateBegins struct {
	driver.Adapter
	n *atomic.Int64
}

func (l lateBegins) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	if ctx.Err() != nil {
		l.n.Add(1)
	}
	return l.Adapter.(driver.Transactor).Transaction(ctx, fn)
}

// roundTrips makes every read and write inside a transaction take at least
// rtt, as a round trip to a server would; it waits on the context, as a
// driver does.
type roundTrips struct {
	driver.Adapter
	rtt time.Duration
}

func (r roundTrips) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return r.Adapter.(driver.Transactor).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		return fn(ctx, roundTrips{tx, r.rtt})
	})
}

func (r roundTrips) wait(ctx context.Context) error {
	timer := time.NewTimer(r.rtt)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

func (r roundTrips) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	return r.Adapter.FindOne(ctx, t, where)
}

func (r roundTrips) UpdateMany(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (int64, error) {
	if err := r.wait(ctx); err != nil {
		return 0, err
	}
	return r.Adapter.UpdateMany(ctx, t, where, set)
}

func TestFallbackContext(t *testing.T) {
	t.Run("cancelled during the second attempt", func(t *testing.T) {
		l, db := newLosing(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l.cancelAt, l.cancel = 2, cancel
		_, ok, err := db.IncrementOne(ctx, decrement)
		if ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("IncrementOne = %v, %v; want context.Canceled", ok, err)
		}
		if errors.Is(err, core.ErrContention) {
			t.Errorf("a cancelled call is not contention: %v", err)
		}
		if a := l.attempts.Load(); a != 2 {
			t.Errorf("%d attempts, want 2: the fallback must stop when the context ends", a)
		}
		wrappedOnce(t, err, "IncrementOne", core.ModelRateLimit)
	})
	t.Run("cancelled before the call", func(t *testing.T) {
		l, db := newLosing(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err := db.IncrementOne(ctx, decrement)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if a := l.attempts.Load(); a != 0 {
			t.Errorf("%d attempts on a cancelled context", a)
		}
	})
	t.Run("deadline on the memory store", func(t *testing.T) {
		m := memory.New()
		db := mustNew(t, m.WithoutIncrementOne())
		mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k", "count": 10})
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		defer cancel()
		<-ctx.Done()
		_, _, err := db.IncrementOne(ctx, decrement)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		if row := mustFind(t, db, core.ModelRateLimit); row.Int("count") != 10 {
			t.Errorf("count = %d, want 10", row.Int("count"))
		}
	})
}

// breakAfterWrite runs the memory store's transactions but fails the
// fallback after its guarded write succeeded, when it reads the row back:
// the transaction must roll the write back.
type breakAfterWrite struct {
	driver.Adapter
	fail    func(ctx context.Context) error // the read-back's error
	written atomic.Int64                    // rows the guarded writes changed
}

func (b *breakAfterWrite) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return b.Adapter.(driver.Transactor).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		return fn(ctx, &breakingTx{Adapter: tx, b: b})
	})
}

type breakingTx struct {
	driver.Adapter
	b       *breakAfterWrite
	written bool
}

func (tx *breakingTx) UpdateMany(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (int64, error) {
	n, err := tx.Adapter.UpdateMany(ctx, t, where, set)
	tx.b.written.Add(n)
	tx.written = n > 0
	return n, err
}

func (tx *breakingTx) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	if tx.written {
		return nil, tx.b.fail(ctx)
	}
	return tx.Adapter.FindOne(ctx, t, where)
}

func TestFallbackRollsBackAFailedAttempt(t *testing.T) {
	cases := []struct {
		name string
		fail func(ctx context.Context) error
		want error
	}{
		{"read-back fails", func(context.Context) error { return errBoom }, errBoom},
		{"context ends after the write", nil, context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := memory.New()
			b := &breakAfterWrite{Adapter: m.WithoutIncrementOne(), fail: c.fail}
			db := mustNew(t, b)
			mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k", "count": 10, "lastRequest": 1})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.fail == nil {
				b.fail = func(ctx context.Context) error { cancel(); return ctx.Err() }
			}
			req := decrement
			req.Set = map[string]any{"lastRequest": 2}
			_, ok, err := db.IncrementOne(ctx, req)
			if ok || !errors.Is(err, c.want) {
				t.Fatalf("IncrementOne = %v, %v; want %v", ok, err, c.want)
			}
			wrappedOnce(t, err, "IncrementOne", core.ModelRateLimit)
			if b.written.Load() != 1 {
				t.Fatalf("the guarded write changed %d rows; the test needs it to have written", b.written.Load())
			}
			row := mustFind(t, db, core.ModelRateLimit, core.Eq("key", "k"))
			if row.Int("count") != 10 || row.Int("lastRequest") != 1 {
				t.Errorf("half-applied: row %v, want count 10 and lastRequest 1", row)
			}
		})
	}
}

// TestIncrementPaths checks what native and fallback IncrementOne must agree
// on, one path per subtest.
func TestIncrementPaths(t *testing.T) {
	for name, adapter := range incrementPaths {
		setup := func(t *testing.T) *core.DB {
			db := mustNew(t, adapter(memory.New()))
			if db.NativeIncrement() != (name == "native") {
				t.Fatalf("NativeIncrement() = %v", db.NativeIncrement())
			}
			return db
		}
		t.Run(name+"/NULL plus a delta stays NULL", func(t *testing.T) { testIncrementNullStaysNull(t, setup(t)) })
		t.Run(name+"/no match is not an error", func(t *testing.T) { testIncrementNoMatch(t, setup(t)) })
		t.Run(name+"/several rows match, exactly one changes", func(t *testing.T) { testIncrementOneOfSeveral(t, setup(t)) })
		t.Run(name+"/set only, and the returned row is the stored one", func(t *testing.T) { testIncrementSetOnly(t, setup(t)) })
		t.Run(name+"/overflow is an error and changes nothing", func(t *testing.T) { testIncrementOverflow(t, setup(t)) })
	}
}

// testIncrementNullStaysNull checks that a delta leaves a NULL field NULL,
// while the other deltas and Set of the same request apply.
func testIncrementNullStaysNull(t *testing.T, db *core.DB) {
	mustCreate(t, db, core.ModelAPIKey, apikeyValues("h"))
	row, ok, err := db.IncrementOne(context.Background(), core.IncrementRequest{Model: core.ModelAPIKey,
		Where:     []core.Where{core.Eq("key", "h"), core.IsNull("remaining")},
		Increment: map[string]int64{"remaining": -1, "requestCount": 1, "rateLimitMax": 5},
		Set:       map[string]any{"name": "n"}})
	if err != nil || !ok {
		t.Fatalf("IncrementOne = %v, %v", ok, err)
	}
	if !row.IsNull("remaining") || !row.IsNull("rateLimitMax") || row.Int("requestCount") != 1 || row.Text("name") != "n" {
		t.Errorf("row after the write: %v", row)
	}
	stored := mustFind(t, db, core.ModelAPIKey, core.Eq("key", "h"))
	if !stored.IsNull("remaining") || stored.Int("requestCount") != 1 {
		t.Errorf("stored row: %v", stored)
	}
}

// testIncrementNoMatch checks that a guard matching no row gives no row,
// no error and no write.
func testIncrementNoMatch(t *testing.T, db *core.DB) {
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k", "count": 0})
	row, ok, err := db.IncrementOne(context.Background(), decrement)
	if err != nil || ok || row != nil {
		t.Errorf("IncrementOne = %v, %v, %v; want no match", row, ok, err)
	}
	if row := mustFind(t, db, core.ModelRateLimit); row.Int("count") != 0 {
		t.Errorf("count = %d", row.Int("count"))
	}
}

// testIncrementOneOfSeveral checks that IncrementOne changes one row when
// the where clauses match several.
func testIncrementOneOfSeveral(t *testing.T, db *core.DB) {
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": k, "count": 1})
	}
	row, ok, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
		Where: []core.Where{core.Gte("count", 1)}, Increment: map[string]int64{"count": 5}})
	if err != nil || !ok || row.Int("count") != 6 {
		t.Fatalf("IncrementOne = %v, %v, %v", row, ok, err)
	}
	if n, _ := db.Count(ctx, core.ModelRateLimit, core.Eq("count", 6)); n != 1 {
		t.Errorf("%d rows changed, want 1", n)
	}
}

// testIncrementSetOnly checks a request with Set and no Increment, and that
// the row returned is the row stored.
func testIncrementSetOnly(t *testing.T, db *core.DB) {
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k", "count": 3})
	row, ok, err := db.IncrementOne(context.Background(), core.IncrementRequest{Model: core.ModelRateLimit,
		Where: []core.Where{core.Eq("key", "k")}, Set: map[string]any{"count": 0, "lastRequest": 42}})
	if err != nil || !ok || row.Int("count") != 0 || row.Int("lastRequest") != 42 {
		t.Fatalf("IncrementOne = %v, %v, %v", row, ok, err)
	}
	stored := mustFind(t, db, core.ModelRateLimit)
	if stored.Int("count") != 0 || stored.Int("lastRequest") != 42 || stored.Int("id") != row.Int("id") {
		t.Errorf("stored %v, returned %v", stored, row)
	}
}

// testIncrementOverflow checks that an increment past MaxInt64 fails,
// wrapped once, and leaves the row as it was.
func testIncrementOverflow(t *testing.T, db *core.DB) {
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k", "count": 1})
	_, ok, err := db.IncrementOne(context.Background(), core.IncrementRequest{Model: core.ModelRateLimit,
		Where: []core.Where{core.Eq("key", "k")}, Increment: map[string]int64{"count": math.MaxInt64}})
	if ok || err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Fatalf("IncrementOne = %v, %v; want an overflow error", ok, err)
	}
	wrappedOnce(t, err, "IncrementOne", core.ModelRateLimit)
	if row := mustFind(t, db, core.ModelRateLimit); row.Int("count") != 1 {
		t.Errorf("count = %d, want 1", row.Int("count"))
	}
}

// aborting is an adapter whose first transactions the database aborts for
// concurrent writers (a deadlock victim): they fail with ErrContention
// and take no effect.
type aborting struct {
	*memory.Memory
	aborts atomic.Int64 // transactions still to abort
	tries  atomic.Int64
}

func (a *aborting) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	a.tries.Add(1)
	if a.aborts.Add(-1) >= 0 {
		return fmt.Errorf("%w: Error 1213 (40001): Deadlock found", core.ErrContention)
	}
	return a.Memory.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		return fn(ctx, &abortingTx{Adapter: tx, a: a})
	})
}

// abortingTx nests through aborting's counter too.
type abortingTx struct {
	driver.Adapter
	a *aborting
}

func (x *abortingTx) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	x.a.tries.Add(1)
	if x.a.aborts.Add(-1) >= 0 {
		return fmt.Errorf("%w: Error 1213 (40001): Deadlock found", core.ErrContention)
	}
	return x.Adapter.(driver.Transactor).Transaction(ctx, fn)
}

// The fallback retries a transaction of its own that the database aborted
// (nothing of it took effect), but inside a caller's transaction, which
// such an abort ends, it returns the error for the caller to repeat.
func TestFallbackRetriesAbortedTransactions(t *testing.T) {
	ctx := t.Context()
	m := memory.New()
	mustCreate(t, mustNew(t, m), core.ModelRateLimit, map[string]any{"key": "k", "count": 10})
	a := &aborting{Memory: m}
	a.aborts.Store(3)
	db := mustNew(t, a, core.WithFallback())
	req := core.IncrementRequest{Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", "k")}, Increment: map[string]int64{"count": -1}}
	row, ok, err := db.IncrementOne(ctx, req)
	if err != nil || !ok || row.Int("count") != 9 || a.tries.Load() != 4 {
		t.Fatalf("after 3 aborted transactions: row %v ok %v err %v tries %d, want count 9 after 4 tries", row, ok, err, a.tries.Load())
	}
	err = db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		a.aborts.Store(1)
		_, _, err := tx.IncrementOne(ctx, req)
		return err
	})
	if !errors.Is(err, core.ErrContention) {
		t.Fatalf("inside a caller's transaction: err = %v, want ErrContention returned", err)
	}
}
