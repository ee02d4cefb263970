package adaptertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/driver"
)

// The load of the API-key races.
const (
	apiKeyLastUnitCallers = 50
	apiKeyRefillCallers   = 20
	apiKeyRateCallers     = 20
)

// The sentences of the contract the API-key races check.
const (
	ruleLastUnit          = "a key with remaining 1 verified by 50 concurrent callers admits exactly 1, answers usage exceeded to the other 49, and stores remaining 0"
	ruleRefillDue         = "a key whose refill is due, verified by 20 concurrent callers, is refilled exactly once and admits exactly refillAmount callers"
	ruleRateLimitLastSlot = "a key one request short of its rate limit, verified by 20 concurrent callers, admits exactly 1, and its quota falls by exactly 1: rate-limited requests spend no quota"
	rulePermissionRevoked = "a permission taken away after every caller has verified the key with it is refused to 50 concurrent callers, spending nothing, while 50 concurrent callers asking for a permission it kept admit exactly its remaining quota"
	ruleNamedLimits       = "a key with named limits requests (1000) and tokens (100), verified by 50 concurrent callers each spending 1 request and 7 tokens, admits exactly 14; the other 36 answer RATE_LIMITED naming tokens and spend nothing: the key's quota, requests and tokens are spent exactly 14, 14 and 98"
	ruleOwnerLimits       = "two keys of one owner, one with a quota of 5, share the owner's named limit of 100 tokens: 50 concurrent callers, half on each key, each spending 7 tokens, admit exactly 14 in all, and each key's quota falls by exactly its own admissions: a denial on either side spends nothing on the other"
	ruleAnchoredRefill    = "a spent key refilled with 5 on a day of the month at a time, verified by 20 concurrent callers that remember it as spent, admits none a millisecond before the anchor instant, exactly 5 at it (one refill: they see remaining 4 to 0 once each), none again before the next instant, and exactly 5 at the next one"
	ruleRerolled          = "a key rerolled while 50 callers verify it, half with the old plaintext and half with the new one once it exists, admits exactly its quota, counted once on the one record; once the grace period is over, the old plaintext is invalid to 50 concurrent callers while the new one admits exactly the quota left"
)

// Named limits, owner limits and rerolls have no variants on core's
// transaction fallback. Named limits write inside a transaction of their
// own, where the fallback's re-reads on MySQL see that transaction's
// snapshot, not the writes that beat it, so each lost race costs a whole
// transaction: exact, but too slow to race 50 callers through. A reroll
// changes no counter, so on the fallback its race shows nothing that
// LastUnit's does not; core/apikey's tests cover both on the fallback.

// keyRace runs an API-key race rounds times (once under -short), each on
// fresh keys, with a manager per caller DB (f.callers).
func keyRace(body func(context.Context, *apiKeyRound) error, rounds int) func(testing.TB, *Fixture) {
	return func(t testing.TB, f *Fixture) {
		if testing.Short() && f.needs&severalPools != 0 {
			t.Skip("-short runs the single-pool variant of each race")
		}
		r, err := newAPIKeyRound(f)
		if err != nil {
			t.Fatal(err)
		}
		for round := range roundsOf(rounds) {
			if err := body(f.Ctx, r); err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
	}
}

// apiKeyRound is what one round of a race gets: a manager per caller DB,
// all sharing one settable clock, and an ungated manager on f.DB to set up
// keys and read them back.
type apiKeyRound struct {
	f       *Fixture
	admin   *apikey.Manager
	callers []*apikey.Manager
	clock   *Clock
	gate    *atomic.Pointer[readBarrier]
	// limitGate, when armed, holds the reads of named limits instead.
	limitGate *atomic.Pointer[readBarrier]
}

// newAPIKeyRound makes the managers of a race: every caller's first read
// waits at the barrier until all callers have read, so that they all
// decide from one snapshot, the worst interleaving for the guarded write
// to survive.
func newAPIKeyRound(f *Fixture) (*apiKeyRound, error) {
	dbs, err := f.callers()
	if err != nil {
		return nil, fmt.Errorf("opening the callers' DBs: %w", err)
	}
	r := &apiKeyRound{f: f, clock: NewClock(time.Now().Truncate(time.Millisecond)), gate: &atomic.Pointer[readBarrier]{}, limitGate: &atomic.Pointer[readBarrier]{}}
	if r.admin, err = apikey.New(f.DB, apikey.WithClock(r.clock.Now)); err != nil {
		return nil, err
	}
	for _, db := range dbs {
		opts := []core.Option{core.WithSchema(f.Schema)}
		if !db.NativeIncrement() {
			opts = append(opts, core.WithFallback())
		}
		gated, err := core.New(hookRead(db.Adapter(), func(ctx context.Context, rec driver.Record) {
			if rec == nil { // a read of named limits
				r.limitGate.Load().wait(ctx)
				return
			}
			r.gate.Load().wait(ctx)
		}), opts...)
		if err != nil {
			return nil, err
		}
		m, err := apikey.New(gated, apikey.WithClock(r.clock.Now))
		if err != nil {
			return nil, err
		}
		r.callers = append(r.callers, m)
	}
	return r, nil
}

// readBarrier holds the first n reads, once done, until all n have arrived
// (or the context ends); later reads pass.
type readBarrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	open    chan struct{}
}

func (b *readBarrier) wait(ctx context.Context) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.arrived++
	a := b.arrived
	if a == b.n {
		close(b.open)
	}
	b.mu.Unlock()
	if a <= b.n {
		select {
		case <-b.open:
		case <-ctx.Done():
		}
	}
}

// outcomes counts the answers of concurrent verifications.
type outcomes struct {
	mu    sync.Mutex
	codes map[apikey.Code]int
	left  map[int64]int // remaining after each admitted verification
	errs  errorList
}

// verifyConcurrently releases n verifications of plaintext at once, caller
// i on manager i mod len(callers), with the read barrier armed.
func (r *apiKeyRound) verifyConcurrently(ctx context.Context, plaintext string, n int, opts ...apikey.VerifyOption) *outcomes {
	return r.verifyAll(ctx, plaintext, n, true, opts)
}

// verifyAll is verifyConcurrently with the barrier armed or not: unarmed
// when some callers may decide without a read (from the key as they last
// saw it), so that fewer than n reads would hold the barrier shut.
func (r *apiKeyRound) verifyAll(ctx context.Context, plaintext string, n int, barrier bool, opts []apikey.VerifyOption) *outcomes {
	o := &outcomes{codes: map[apikey.Code]int{}, left: map[int64]int{}}
	if barrier {
		r.gate.Store(&readBarrier{n: n, open: make(chan struct{})})
		defer r.gate.Store(nil)
	}
	Release(n, func(i int) {
		res, err := r.callers[i%len(r.callers)].Verify(ctx, plaintext, opts...)
		if !o.add(i, res, err) {
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if res.Valid && res.Key.Remaining != nil {
			o.left[*res.Key.Remaining]++
		}
	})
	return o
}

// add counts caller i's answer, or its error; it reports whether the
// verification answered.
func (o *outcomes) add(i int, res apikey.Result, err error) bool {
	if err != nil {
		o.errs.add(fmt.Errorf("caller %d: %w", i, err))
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.codes[res.Code]++
	return true
}

// expect compares the counted codes with want (code → count).
func (o *outcomes) expect(want map[apikey.Code]int) error {
	if err := o.errs.err(); err != nil {
		return err
	}
	same := true
	for code, n := range want {
		same = same && o.codes[code] == n
	}
	for code, n := range o.codes {
		same = same && want[code] == n
	}
	if !same {
		return fmt.Errorf("verifications answered %s, want %s", describe(o.codes), describe(want))
	}
	return nil
}

// describe formats outcome counts, naming the admitted ones.
func describe(codes map[apikey.Code]int) string {
	out := fmt.Sprintf("%d admitted", codes[""])
	for _, c := range []apikey.Code{apikey.CodeInvalid, apikey.CodeDisabled, apikey.CodeExpired, apikey.CodeForbidden, apikey.CodeUsageExceeded, apikey.CodeRateLimited} {
		if codes[c] > 0 {
			out += fmt.Sprintf(", %d %s", codes[c], c)
		}
	}
	return out
}

func (r *apiKeyRound) create(ctx context.Context, p apikey.CreateParams) (string, *apikey.Key, error) {
	p.ReferenceID = "adaptertest"
	plaintext, k, err := r.admin.Create(ctx, p)
	if err != nil {
		return "", nil, fmt.Errorf("creating the key: %w", err)
	}
	return plaintext, k, nil
}

func ptrInt(n int64) *int64 { return &n }

// expectStored reads the key back and checks its counters.
func (r *apiKeyRound) expectStored(ctx context.Context, id, remaining, requestCount int64) error {
	got, err := r.admin.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("reading the key back: %w", err)
	}
	if got.Remaining == nil || *got.Remaining != remaining || got.RequestCount != requestCount {
		left := "NULL"
		if got.Remaining != nil {
			left = fmt.Sprint(*got.Remaining)
		}
		return fmt.Errorf("stored remaining %s and requestCount %d, want %d and %d", left, got.RequestCount, remaining, requestCount)
	}
	return nil
}
