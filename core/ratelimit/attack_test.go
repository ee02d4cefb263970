package ratelimit_test

// Tests for the holes of issue 16 that lie in the rate limiter: keys a
// database refuses, hung-up clients, the reset a check reports, zero values
// and nils, IPv4-mapped proxy prefixes and the schema check.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// TestSafeKey: every result is storable (valid UTF-8, no NUL, at most
// MaxKeyLength bytes), plain keys stay as they are, and distinct inputs
// stay distinct.
func TestSafeKey(t *testing.T) {
	long := strings.Repeat("x", 300)
	inputs := []string{
		"203.0.113.7|/login", "203.0.113.7|/\x00", "203.0.113.7|/\xff", "203.0.113.7|/%FF",
		"203.0.113.7|/%25FF", "203.0.113.7|/\xc3\x28", "203.0.113.7|/%C3%28", "a#b", "a%23b",
		"\x7f", "\u0085", "é", "\xc3", long, long + "y", long[:254] + "#", long[:252] + "\xff",
		"/" + strings.Repeat("é", 200) + "a", "/" + strings.Repeat("é", 200) + "b",
	}
	seen := map[string]string{}
	for _, in := range inputs {
		k := ratelimit.SafeKey(in)
		if !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0 || len(k) > ratelimit.MaxKeyLength {
			t.Errorf("SafeKey(%q) = %q: not storable (%d bytes)", in, k, len(k))
		}
		if k != ratelimit.SafeKey(in) {
			t.Errorf("SafeKey(%q) is not deterministic", in)
		}
		if prev, dup := seen[k]; dup {
			t.Errorf("SafeKey(%q) = SafeKey(%q) = %q", in, prev, k)
		}
		seen[k] = in
	}
	for in, want := range map[string]string{
		"203.0.113.7|/login":    "203.0.113.7|/login",
		"2001:db8::/64|/api/é":  "2001:db8::/64|/api/é",
		"203.0.113.7|/\xff":     "203.0.113.7|/%FF",
		"203.0.113.7|/%FF":      "203.0.113.7|/%25FF",
		"203.0.113.7|/a\x00b#c": "203.0.113.7|/a%00b%23c",
	} {
		if got := ratelimit.SafeKey(in); got != want {
			t.Errorf("SafeKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUnstorableKeysAreInvalid: Consume with a key no database can store
// is bad input on every storage, refused before any I/O and denied even
// under fail-open, never an outage.
func TestUnstorableKeysAreInvalid(t *testing.T) {
	ctx := context.Background()
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithFailOpen())
		for _, key := range []string{"\xff", "a\x00b", "\xc3\x28", strings.Repeat("k", 200) + "\xff"} {
			before := b.calls()
			admitted, refused := 0, 0
			var last error
			for i := 0; i < 10; i++ {
				d, err := l.Consume(ctx, key, rule3)
				if errors.Is(err, core.ErrInvalid) {
					refused++
				}
				if d.Allowed {
					admitted++
				}
				last = err
			}
			if admitted != 0 || refused != 10 || b.calls() != before {
				t.Errorf("key %.12q: %d of 10 admitted, %d refused as invalid, %d storage calls; want 0, 10 and 0 (last error: %v)",
					key, admitted, refused, b.calls()-before, last)
			}
		}
	})
}

// wordy is a database whose client hangs up during the query (hangUp
// cancels the request's context) and whose driver then reports a failure
// in its own words rather than wrapping ctx.Err(). Without hangUp it is
// simply down.
type wordy struct {
	*memory.Memory
	hangUp context.CancelFunc
}

var errBadConn = errors.New("driver: bad connection")

func (w wordy) IncrementOne(context.Context, *driver.Table, []driver.Where, []driver.Delta, []driver.Assignment) (driver.Record, error) {
	if w.hangUp != nil {
		w.hangUp()
		return nil, errBadConn
	}
	return nil, errBroken
}

// TestOwnCancellationIsNotAnOutage: under fail-open, a storage error while
// the request's own context is done is denied, on every storage, whatever
// words the driver used; the same error with a live context is admitted.
func TestOwnCancellationIsNotAnOutage(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithFailOpen())
		for name, ctx := range map[string]context.Context{"cancelled": cancelled, "expired": expired} {
			admitted := 0
			for i := 0; i < 50; i++ {
				d, err := l.Consume(ctx, "gone", rule3)
				if !errors.Is(err, ctx.Err()) {
					t.Errorf("%s: err = %v, want %v", name, err, ctx.Err())
				}
				if d.Allowed {
					admitted++
				}
			}
			if admitted != 0 {
				t.Errorf("%s: %d of 50 admitted on a limit of 3", name, admitted)
			}
		}
	})
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	db, _ := core.New(wordy{Memory: memory.New(), hangUp: hangUp})
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithFailOpen())
	if d, err := l.Consume(ctx, "gone", rule3); d.Allowed || !errors.Is(err, errBadConn) {
		t.Errorf("hung up mid-query, driver's own words: %+v, %v; want denied with the driver's error", d, err)
	}
	down, _ := core.New(wordy{Memory: memory.New()})
	l = newLimiter(t, ratelimit.Database(down), ratelimit.WithFailOpen())
	if d, err := l.Consume(context.Background(), "up", rule3); !d.Allowed || !errors.Is(err, errBroken) {
		t.Errorf("live context, storage down: %+v, %v; want admitted with the storage error", d, err)
	}
}

// TestEveryStorageReportsTheSameReset: for the same state every storage
// reports the same decision, Reset and RetryAfter included, for checks
// (cost 0), impossible costs (read, not written) and consumption alike.
func TestEveryStorageReportsTheSameReset(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Minute, Max: 3}
	ms, s, m := time.Millisecond, time.Second, time.Minute
	steps := []step{
		{at: 0, cost: 0, allowed: true, remaining: 3, reset: m},                                   // no window yet
		{at: 0, cost: 2, allowed: true, remaining: 1, reset: m},                                   // opens the window
		{at: 500 * ms, cost: 0, allowed: true, remaining: 1, reset: m},                            // the window's end, not now + window
		{at: 1 * s, cost: 1, allowed: true, remaining: 0, reset: m},                               //
		{at: 1500 * ms, cost: 0, allowed: false, remaining: 0, reset: m, retry: m - 1500*ms},      // 58.5 s, not 60 s
		{at: 1500 * ms, cost: 4, allowed: false, remaining: 0, reset: m, retry: m - 1500*ms},      // can never fit
		{at: 2 * s, cost: 1, allowed: false, remaining: 0, reset: m, retry: m - 2*s},              //
		{at: m - ms, cost: 0, allowed: false, remaining: 0, reset: m, retry: ms},                  //
		{at: m, cost: 0, allowed: true, remaining: 3, reset: 2 * m},                               // the window is over
		{at: m + 10*s, cost: 1, allowed: true, remaining: 2, reset: 2*m + 10*s},                   //
		{at: m + 40*s, cost: 0, allowed: true, remaining: 2, reset: 2*m + 10*s},                   //
		{at: m + 40*s, cost: 4, allowed: false, remaining: 2, reset: 2*m + 10*s, retry: m - 30*s}, //
	}
	type storage struct {
		name string
		make func(c *clock) ratelimit.Storage
	}
	var all []storage
	for _, b := range backends(t) {
		all = append(all, storage{b.name, b.storage})
	}
	all = append(all, storage{"secondary-plain", func(c *clock) ratelimit.Storage {
		return ratelimit.Secondary(plainIncrement{memory.NewStorage(memory.WithClock(c.Now))})
	}})
	for _, st := range all {
		for _, cache := range []int{0, 100} {
			t.Run(fmt.Sprintf("%s/cache-%d", st.name, cache), func(t *testing.T) {
				c := newClock()
				l := newLimiter(t, st.make(c), ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(cache))
				runSteps(t, l, c, fmt.Sprint("same-", cache), rule, steps) // the database backends share a table
			})
		}
	}
}

// TestSecondaryCheckWritesNothing: the read that gives a check its TTL
// creates no counter and moves no expiry.
func TestSecondaryCheckWritesNothing(t *testing.T) {
	ctx := context.Background()
	for _, plain := range []bool{false, true} {
		c := newClock()
		ss := memory.NewStorage(memory.WithClock(c.Now))
		var sec driver.SecondaryStorage = ss
		if plain {
			sec = plainIncrement{ss}
		}
		l := newLimiter(t, ratelimit.Secondary(sec), ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(0))
		if _, err := l.Check(ctx, "fresh", rule3); err != nil || ss.Len() != 0 {
			t.Errorf("plain %v: check of a fresh key: %v, %d entries stored; want none", plain, err, ss.Len())
		}
		if _, err := l.Consume(ctx, "k", rule3); err != nil {
			t.Fatal(err)
		}
		c.Set(9 * time.Second)
		if d, err := l.Check(ctx, "k", rule3); err != nil || d.Remaining != 2 {
			t.Fatalf("plain %v: check: %+v, %v", plain, d, err)
		}
		c.Set(10 * time.Second) // the counter expires on time, not extended by the check
		if v, ok, _ := ss.Get(ctx, ratelimit.SecondaryPrefix+"k"); ok {
			t.Errorf("plain %v: counter still holds %q after its window", plain, v)
		}
	}
}

// panics runs fn and reports a panic as an error, so a test can say which
// call panicked and go on.
func panics(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}

// TestZeroValuesAndNilsAreErrors: each of these panicked; each now returns
// an error wrapping core.ErrInvalid that says what is wrong.
func TestZeroValuesAndNilsAreErrors(t *testing.T) {
	ctx := context.Background()
	var zero ratelimit.Limiter
	var nilLimiter *ratelimit.Limiter
	var zeroDB core.DB
	var nilDB *core.DB
	typedNil, _ := core.New((*memory.Memory)(nil))
	var nilSecondary driver.SecondaryStorage = (*memory.Storage)(nil)
	newWith := func(s ratelimit.Storage, opts ...ratelimit.Option) func() error {
		return func() error { _, err := ratelimit.New(s, opts...); return err }
	}
	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"zero Limiter Consume", func() error { _, err := zero.Consume(ctx, "k", rule3); return err }, "not initialised"},
		{"zero Limiter Check", func() error { _, err := zero.Check(ctx, "k", rule3); return err }, "not initialised"},
		{"zero Limiter Prune", func() error { _, err := zero.Prune(ctx); return err }, "not initialised"},
		{"zero Limiter StartPruning", func() error { return zero.StartPruning(ctx, time.Second, nil) }, "not initialised"},
		{"zero Limiter CheckSchema", func() error { return zero.CheckSchema(ctx) }, "not initialised"},
		{"nil Limiter Consume", func() error { _, err := nilLimiter.Consume(ctx, "k", rule3); return err }, "not initialised"},
		{"zero Limiter CheckRule", func() error { return zero.CheckRule(rule3) }, "not initialised"},
		{"nil Limiter CheckRule", func() error { return nilLimiter.CheckRule(ratelimit.Unlimited) }, "not initialised"},
		{"zero core.DB FindOne", func() error { _, _, err := zeroDB.FindOne(ctx, core.ModelRateLimit); return err }, "not initialised"},
		{"zero core.DB Create", func() error { _, err := zeroDB.Create(ctx, core.ModelRateLimit, nil); return err }, "not initialised"},
		{"zero core.DB IncrementOne", func() error {
			_, _, err := zeroDB.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit})
			return err
		}, "not initialised"},
		{"zero core.DB Count", func() error { _, err := zeroDB.Count(ctx, core.ModelRateLimit); return err }, "not initialised"},
		{"zero core.DB DeleteMany", func() error { _, err := zeroDB.DeleteMany(ctx, core.ModelRateLimit); return err }, "not initialised"},
		{"zero core.DB InTx", func() error {
			return zeroDB.InTx(ctx, func(context.Context, *core.DB) error { return nil })
		}, "not initialised"},
		{"nil core.DB FindMany", func() error { _, err := nilDB.FindMany(ctx, core.ModelRateLimit, nil, nil); return err }, "not initialised"},
		{"nil core.DB UpdateMany", func() error {
			_, err := nilDB.UpdateMany(ctx, core.ModelRateLimit, nil, map[string]any{"count": 1})
			return err
		}, "not initialised"},
		{"Database(&core.DB{})", newWith(ratelimit.Database(&core.DB{})), "not initialised"},
		{"Database of a typed-nil adapter", newWith(ratelimit.Database(typedNil)), "core.DB"},
		{"nil option", newWith(ratelimit.Memory(10), nil), "option 0 is nil"},
		{"nil option after others", newWith(ratelimit.Memory(10), ratelimit.WithFailOpen(), nil), "option 1 is nil"},
		{"typed-nil secondary", newWith(ratelimit.Secondary((*memory.Storage)(nil))), "nil storage"},
		{"typed-nil secondary interface", newWith(ratelimit.Secondary(nilSecondary)), "nil storage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := panics(tc.call)
			if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
	// The nil-safe accessors answer rather than panic.
	if err := panics(func() error {
		if zeroDB.Schema() != nil || nilDB.Adapter() != nil || nilDB.NativeIncrement() || nilLimiter.Close() != nil || zero.Close() != nil {
			return errors.New("unexpected answer")
		}
		return nil
	}); err != nil {
		t.Errorf("accessors of a zero or nil DB or Limiter: %v", err)
	}
}

// schemaDouble is an adapter whose table lacks the unique key on
// rate-limit keys until fixed, and that counts the checks.
type schemaDouble struct {
	*memory.Memory
	fail   atomic.Pointer[error]
	checks atomic.Int64
	// When hold is set, the first check says so on entered and then
	// waits for hold to close: a check still running.
	hold, entered chan struct{}
}

var errNoUnique = fmt.Errorf("%w: rate_limit has no unique index on key", core.ErrSchema)

func (s *schemaDouble) CheckSchema(_ context.Context, t *driver.Table) error {
	if s.checks.Add(1) == 1 && s.hold != nil {
		s.entered <- struct{}{}
		<-s.hold
	}
	if t.Model != core.ModelRateLimit {
		return fmt.Errorf("checked model %q, want %q", t.Model, core.ModelRateLimit)
	}
	if p := s.fail.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *schemaDouble) failWith(err error) {
	if err == nil {
		s.fail.Store(nil)
		return
	}
	s.fail.Store(&err)
}

// TestDatabaseChecksTheSchemaFirst: the limiter refuses to decide on a
// table without what exactness depends on, even under fail-open, until
// the check passes; then it checks no more.
func TestDatabaseChecksTheSchemaFirst(t *testing.T) {
	ctx := context.Background()
	a := &schemaDouble{Memory: memory.New()}
	a.failWith(errNoUnique)
	db, err := core.New(a)
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithFailOpen())
	if err := l.CheckSchema(ctx); !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), "no unique index on key") {
		t.Errorf("CheckSchema at start-up: %v, want ErrSchema naming the index", err)
	}
	admitted := 0
	for i := 0; i < 10; i++ {
		d, err := l.Consume(ctx, "k", rule3)
		if !errors.Is(err, core.ErrSchema) {
			t.Errorf("request %d: err = %v, want ErrSchema", i, err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if d, err := l.Check(ctx, "k", rule3); d.Allowed || !errors.Is(err, core.ErrSchema) {
		t.Errorf("check: %+v, %v; want denied with ErrSchema", d, err)
	}
	if n, _ := db.Count(ctx, core.ModelRateLimit); admitted != 0 || n != 0 || a.checks.Load() != 12 {
		t.Errorf("unfit table: %d of 10 admitted, %d rows, %d checks; want 0, 0 and 12 (one a call until it passes)", admitted, n, a.checks.Load())
	}
	// A check that fails for want of a database is an outage: fail-open
	// admits, and the check is asked again next time.
	a.failWith(errBroken)
	if d, err := l.Consume(ctx, "k", rule3); !d.Allowed || !errors.Is(err, errBroken) {
		t.Errorf("check failing on an outage: %+v, %v; want admitted under fail-open", d, err)
	}
	// Once the table is fixed, one check passes and is remembered.
	a.failWith(nil)
	before := a.checks.Load()
	for i := 0; i < 3; i++ {
		if d, err := l.Consume(ctx, "k", rule3); err != nil || !d.Allowed {
			t.Fatalf("request %d on the fixed table: %+v, %v", i, d, err)
		}
	}
	if err := l.CheckSchema(ctx); err != nil {
		t.Errorf("CheckSchema on the fixed table: %v", err)
	}
	if got := a.checks.Load() - before; got != 1 {
		t.Errorf("%d checks after the table was fixed, want 1", got)
	}
}

// TestSchemaCheckRunsOnceForConcurrentCallers: while the first check
// runs, other first requests wait for it rather than run their own, and a
// request whose context ends meanwhile gives up at once.
func TestSchemaCheckRunsOnceForConcurrentCallers(t *testing.T) {
	a := &schemaDouble{Memory: memory.New(), hold: make(chan struct{}), entered: make(chan struct{})}
	db, _ := core.New(a)
	c := newClock()
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now))
	rule := ratelimit.Rule{Window: time.Minute, Max: 10}
	results := make(chan error, 33)
	consume := func(ctx context.Context) {
		d, err := l.Consume(ctx, "burst", rule)
		if err == nil && !d.Allowed {
			err = errors.New("denied")
		}
		results <- err
	}
	go consume(context.Background())
	<-a.entered // the first check is running
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	consume(cancelled)
	if err := <-results; !errors.Is(err, context.Canceled) || a.checks.Load() != 1 {
		t.Errorf("cancelled caller during the first check: %v after %d checks; want context.Canceled after 1", err, a.checks.Load())
	}
	for i := 0; i < 9; i++ {
		go consume(context.Background())
	}
	close(a.hold)
	for i := 0; i < 10; i++ {
		if err := <-results; err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if a.checks.Load() != 1 {
		t.Errorf("%d schema checks for 10 concurrent first requests, want 1", a.checks.Load())
	}
}

func TestLongKeysFitTheKeyColumn(t *testing.T) {
	short := "203.0.113.7|/login"
	if got := ratelimit.SafeKey(short); got != short {
		t.Errorf("short key changed: %q", got)
	}
	long1 := "203.0.113.7|/" + strings.Repeat("é", 200) + "a"
	long2 := "203.0.113.7|/" + strings.Repeat("é", 200) + "b"
	k1, k2 := ratelimit.SafeKey(long1), ratelimit.SafeKey(long2)
	if len(k1) > ratelimit.MaxKeyLength || k1 == k2 || k1 != ratelimit.SafeKey(long1) {
		t.Errorf("long keys: %d bytes, distinct %v, stable %v", len(k1), k1 != k2, k1 == ratelimit.SafeKey(long1))
	}
	if !strings.HasPrefix(k1, "203.0.113.7|/é") || !utf8.ValidString(k1) {
		t.Errorf("shortened key %q", k1)
	}
	db, _ := core.New(memory.New())
	l := newLimiter(t, ratelimit.Database(db))
	// The database storage itself refuses what the column cannot hold.
	_, err := l.Consume(context.Background(), strings.Repeat("k", 256), rule3)
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "longer than the 255") {
		t.Errorf("256-character key: %v, want ErrInvalid", err)
	}
}
