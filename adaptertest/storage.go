package adaptertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

// StorageCapabilities are what a storage harness claims. The storage suite
// skips, with the reason, every case that needs something not claimed; the
// optional interfaces (driver.BoundedIncrementer, keystore.Claimer) it finds by
// type assertion, as the rate limiter and the API-key verifier do.
type StorageCapabilities struct {
	// ManualClock: the harness's storages read time from a clock that
	// StorageHarness.Advance moves. Expiry is then checked to the instant.
	// Without it the suite writes TTLs of whole seconds and polls, on a
	// deadline, for values to expire in real time.
	ManualClock bool
	// SeveralClients: MakePeer returns storages over independent clients
	// (connection pools) on the same keys, as several application servers
	// would have.
	SeveralClients bool
}

// StorageHarness gives the storage suite secondary storages on one
// keyspace. The suite builds a fresh harness for every subtest and closes it
// at the end of the subtest.
type StorageHarness interface {
	// MakeStorage returns a storage on a keyspace that holds no key yet and
	// that no other harness uses (a key prefix of its own, say), so that
	// subtests sharing a server never collide.
	MakeStorage(ctx context.Context) (driver.SecondaryStorage, error)
	// MakePeer returns another storage on the keyspace of MakeStorage, over
	// a new and independent client. It is called only when
	// Capabilities().SeveralClients is true.
	MakePeer(ctx context.Context) (driver.SecondaryStorage, error)
	// Advance moves the storages' clock forward by d. It is called only
	// when Capabilities().ManualClock is true.
	Advance(d time.Duration)
	// Capabilities describes the storages.
	Capabilities() StorageCapabilities
	// Close removes every key the storages hold and closes every client.
	Close()
}

// StorageHarnessMaker builds a fresh storage harness for one subtest. It
// may call t.Skip when its server is not configured (see [RedisAddr]).
type StorageHarnessMaker func(ctx context.Context, t *testing.T) (StorageHarness, error)

// RunStorage runs the conformance and race suite for secondary storages
// against the storages newHarness makes: Get, Set and Delete, expiry,
// Increment and driver.BoundedIncrementer, hostile keys and values, context
// cancellation, keystore.Claimer, and races for exact counts and exactly one
// winner per claim, on one client and on several. Each case is a subtest,
// skipped with the reason when the storage or the harness lacks what it
// needs. Run it from a test of your storage's package:
//
//	func TestStorageConformance(t *testing.T) { adaptertest.RunStorage(t, newStorageHarness) }
func RunStorage(t *testing.T, newHarness StorageHarnessMaker) {
	runCases(t, storageCases(), func(t *testing.T, needs need) *storageFixture {
		t.Helper()
		return newStorageFixture(t, newHarness, needs)
	})
}

// storageCase is a case of [RunStorage].
type storageCase = testCase[*storageFixture]

// storageCases are the sequential cases, then the races.
func storageCases() []storageCase { return append(storageSequentialCases(), storageRaceCases()...) }

// storageSequentialCases check the storage one call at a time.
func storageSequentialCases() []storageCase {
	return []storageCase{
		{"GetSetDelete", ruleGetSetDelete, 0, storageGetSetDelete},
		{"SetExpires", ruleSetExpires, 0, waitsForTTL(storageSetExpires)},
		{"IncrementCreatesAndAdds", ruleIncrementCreatesAndAdds, 0, storageIncrementCreatesAndAdds},
		{"IncrementKeepsExpiry", ruleIncrementKeepsExpiry, 0, waitsForTTL(storageIncrementKeepsExpiry)},
		{"IncrementTTLMustBePositive", ruleIncrementTTLMustBePositive, 0, storageIncrementTTLMustBePositive},
		{"IncrementOfTextRefused", ruleIncrementOfText, 0, storageIncrementOfText},
		{"BoundedAdmitsUpToMax", ruleBoundedUpToMax, boundedIncrement, storageBoundedUpToMax},
		{"BoundedRefusalChangesNothing", ruleBoundedRefusal, boundedIncrement, storageBoundedRefusal},
		{"BoundedKeepsExpiry", ruleBoundedKeepsExpiry, boundedIncrement, waitsForTTL(storageBoundedKeepsExpiry)},
		{"HostileKeysAndValues", ruleHostileKeysAndValues, 0, storageHostileKeys},
		{"ContextDone", ruleContextDone, 0, storageContextDone},
		{"CreateOnlyWhereAbsent", ruleCreate, creates, storageCreate},
		{"ClaimMissingKey", ruleClaimMissing, claims, storageClaimMissing},
		{"ClaimFollowsApplyClaim", ruleClaimFollowsApplyClaim, claims, storageClaimFollowsApplyClaim},
		{"ClaimChecksPermissions", ruleClaimChecksPermissions, claims, storageClaimChecksPermissions},
		{"ClaimChecksHash", ruleClaimChecksHash, rerolls, storageClaimChecksHash},
		{"ClaimSpendsNamedLimits", ruleClaimSpendsNamedLimits, claims, storageClaimSpendsNamedLimits},
		{"ClaimSharesOwnerLimits", ruleClaimSharesOwnerLimits, sharesOwners, storageClaimSharesOwnerLimits},
		{"PatchSetsFieldsKeepsOthers", rulePatch, claims, storagePatch},
		{"ClaimAndPatchKeepExpiry", ruleClaimKeepsExpiry, claims, waitsForTTL(storageClaimKeepsExpiry)},
		{"RateLimitEdges", ruleRateLimitEdges, boundedIncrement, storageRateLimitEdges},
	}
}

// storageRaceCases release many callers at once, each race on one client
// and on several.
func storageRaceCases() []storageCase {
	return []storageCase{
		{"IncrementExact", ruleRaceIncrementExact, 0, storageRace(raceIncrementExact)},
		{"IncrementExactSeveralClients", ruleRaceIncrementExact, severalClients, storageRace(raceIncrementExact)},
		{"BoundedExact", ruleRaceBoundedExact, boundedIncrement, storageRace(raceBoundedExact)},
		{"BoundedExactSeveralClients", ruleRaceBoundedExact, boundedIncrement | severalClients, storageRace(raceBoundedExact)},
		{"CalendarDayAcrossMidnight", ruleCalendar, boundedIncrement, storageRace(storageCalendar)},
		{"CalendarDayAcrossMidnightSeveralClients", ruleCalendar, boundedIncrement | severalClients, storageRace(storageCalendar)},
		{"CreateOneWinner", ruleRaceCreateOneWinner, creates, storageRace(raceCreateOneWinner)},
		{"CreateOneWinnerSeveralClients", ruleRaceCreateOneWinner, creates | severalClients, storageRace(raceCreateOneWinner)},
		{"ClaimOneWinnerPerKey", ruleRaceClaimOneWinner, claims, storageRace(raceClaimOneWinner)},
		{"ClaimOneWinnerPerKeySeveralClients", ruleRaceClaimOneWinner, claims | severalClients, storageRace(raceClaimOneWinner)},
		{"ClaimRefillOnce", ruleRaceClaimRefill, claims, storageRace(raceClaimRefill)},
		{"ClaimRefillOnceSeveralClients", ruleRaceClaimRefill, claims | severalClients, storageRace(raceClaimRefill)},
		{"ClaimRateLimitExact", ruleRaceClaimRateLimit, claims, storageRace(raceClaimRateLimit)},
		{"ClaimRateLimitExactSeveralClients", ruleRaceClaimRateLimit, claims | severalClients, storageRace(raceClaimRateLimit)},
		{"RerollKeepsClaims", ruleRaceRerollStorage, rerolls, storageRace(raceRerollStorage)},
		{"RerollKeepsClaimsSeveralClients", ruleRaceRerollStorage, rerolls | severalClients, storageRace(raceRerollStorage)},
		{"NamedLimitsExact", ruleRaceNamedLimitsStorage, claims, storageRace(raceNamedLimitsStorage)},
		{"NamedLimitsExactSeveralClients", ruleRaceNamedLimitsStorage, claims | severalClients, storageRace(raceNamedLimitsStorage)},
		{"OwnerLimitsExact", ruleRaceOwnerLimitsStorage, sharesOwners, storageRace(raceOwnerLimitsStorage)},
		{"OwnerLimitsExactSeveralClients", ruleRaceOwnerLimitsStorage, sharesOwners | severalClients, storageRace(raceOwnerLimitsStorage)},
		{"PatchKeepsConcurrentClaims", ruleRacePatchAndClaims, claims, storageRace(racePatchAndClaims)},
		{"PatchKeepsConcurrentClaimsSeveralClients", ruleRacePatchAndClaims, claims | severalClients, storageRace(racePatchAndClaims)},
	}
}

// storageFixture is one subtest's fresh storage harness.
type storageFixture struct {
	ctx   context.Context
	h     StorageHarness
	caps  StorageCapabilities
	s     driver.SecondaryStorage
	has   need          // what the storage and the harness have
	needs need          // what the running case asked for
	start time.Time     // real clock: when the fixture was made
	moved time.Duration // manual clock: how far Advance has moved it
}

func (f *storageFixture) context() context.Context { return f.ctx }

// newStorageFixture makes a fixture for a case that needs needs, and skips
// t when the storage or the harness lacks one of them.
func newStorageFixture(t *testing.T, newHarness StorageHarnessMaker, needs need) *storageFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	h, err := newHarness(ctx, t)
	if err != nil {
		t.Fatalf("making storage harness: %v", err)
	}
	t.Cleanup(h.Close)
	s, err := h.MakeStorage(ctx)
	if err != nil {
		t.Fatalf("making storage: %v", err)
	}
	f := &storageFixture{ctx: ctx, h: h, caps: h.Capabilities(), s: s, needs: needs, start: time.Now()}
	f.has = storageHas(s, f.caps)
	skipLacking(t, needs, f.has)
	return f
}

// storageHas is what the suite finds out about a storage by type
// assertion, as the rate limiter and the API-key verifier do, and what its
// harness declares.
func storageHas(s driver.SecondaryStorage, declared StorageCapabilities) need {
	var has need
	if _, ok := s.(driver.BoundedIncrementer); ok {
		has |= boundedIncrement
	}
	if _, ok := s.(keystore.Creator); ok {
		has |= creates
	}
	if _, ok := s.(keystore.Claimer); ok {
		has |= claims
	}
	if _, ok := s.(keystore.Rerollable); ok {
		has |= rerolls
	}
	if _, ok := s.(keystore.OwnerSharing); ok {
		has |= sharesOwners
	}
	if declared.SeveralClients {
		has |= severalClients
	}
	return has
}

// waitsForTTL marks a case that, without a manual clock, waits for a TTL
// to pass in real time: it runs in parallel with the others then, to
// overlap the waits.
func waitsForTTL(body func(testing.TB, *storageFixture)) func(testing.TB, *storageFixture) {
	return func(t testing.TB, f *storageFixture) {
		if tt, ok := t.(*testing.T); ok && !f.caps.ManualClock {
			tt.Parallel()
		}
		body(t, f)
	}
}

// clients returns n storages on the fixture's keyspace, as n application
// servers would have: the first is f.s; the others come from MakePeer when
// the harness claims SeveralClients, and are f.s otherwise.
func (f *storageFixture) clients(n int) ([]driver.SecondaryStorage, error) {
	out := []driver.SecondaryStorage{f.s}
	for len(out) < n {
		s := f.s
		if f.caps.SeveralClients {
			var err error
			if s, err = f.h.MakePeer(f.ctx); err != nil {
				return nil, fmt.Errorf("MakePeer: %w", err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// now is the time since the fixture was made on the storages' clock: the
// manual clock's moves, or real time.
func (f *storageFixture) now() time.Duration {
	if f.caps.ManualClock {
		return f.moved
	}
	return time.Since(f.start)
}

// advance moves the manual clock; only cases that checked ManualClock call it.
func (f *storageFixture) advance(d time.Duration) {
	f.h.Advance(d)
	f.moved += d
}

// ttl is the expiry the cases give values: whole seconds, which every
// storage can keep (Redis counts them in seconds), and, in real time, short
// enough to wait for but long enough that the calls after a write finish
// well before it ends.
func (f *storageFixture) ttl() time.Duration {
	if f.caps.ManualClock {
		return 10 * time.Second
	}
	return 2 * time.Second
}

// The real-clock tolerances: expiry may be observed up to expiryGrace
// early, as the storage's clock and ours are not one clock; and a value
// must be gone by expiryDeadline after its TTL, polled every expiryPoll.
const (
	expiryGrace    = 20 * time.Millisecond
	expiryDeadline = 10 * time.Second
	expiryPoll     = 10 * time.Millisecond
)

// stalled skips a real-clock case whose TTL passed before it could check
// what it meant to check: the machine stalled, and the storage is not at
// fault. written is f.now() taken before the write.
func (f *storageFixture) stalled(t testing.TB, written, ttl time.Duration) bool {
	t.Helper()
	if f.caps.ManualClock || f.now()-written < ttl-expiryGrace {
		return false
	}
	t.Skipf("inconclusive: %v passed between a write with TTL %v and the check after it; the machine stalled", f.now()-written, ttl)
	return true
}

// expires checks that keys, written at written (f.now() taken before the
// writes) with ttl, are there until their TTL ends and gone from then on.
// With a manual clock it moves the clock to a millisecond before the end,
// then to the end; in real time it polls until every key is gone, and
// fails when one goes before its TTL could have ended or long after it.
func (f *storageFixture) expires(t testing.TB, written, ttl time.Duration, keys ...string) {
	t.Helper()
	if f.caps.ManualClock {
		if d := written + ttl - time.Millisecond - f.now(); d > 0 {
			f.advance(d)
		}
		for _, key := range keys {
			if _, ok, err := f.s.Get(f.ctx, key); err != nil || !ok {
				t.Fatalf("Get(%q) a millisecond before its TTL of %v ends: present %v, err %v; want it still there", key, ttl, ok, err)
			}
		}
		f.advance(time.Millisecond)
		for _, key := range keys {
			if _, ok, err := f.s.Get(f.ctx, key); err != nil || ok {
				t.Fatalf("Get(%q) when its TTL of %v has ended: present %v, err %v; want it gone", key, ttl, ok, err)
			}
		}
		return
	}
	tick := time.NewTicker(expiryPoll)
	defer tick.Stop()
	for left := keys; len(left) > 0; {
		var still []string
		for _, key := range left {
			_, ok, err := f.s.Get(f.ctx, key)
			if err != nil {
				t.Fatalf("Get(%q) while waiting for it to expire: %v", key, err)
			}
			elapsed := f.now() - written
			switch {
			case !ok && elapsed < ttl-expiryGrace:
				t.Fatalf("%q expired after %v, before its TTL of %v ended", key, elapsed, ttl)
			case ok && elapsed > ttl+expiryDeadline:
				t.Fatalf("%q still there %v after it was written with TTL %v: its expiry was extended or lost", key, elapsed, ttl)
			case ok:
				still = append(still, key)
			}
		}
		if left = still; len(left) == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-f.ctx.Done():
			t.Fatalf("waiting for %q to expire: %v", left, f.ctx.Err())
		}
	}
}

// checkTTL checks a counter's TTL as returned: exactly want on a manual
// clock, in (0, want] in real time (which has moved on since).
func (f *storageFixture) checkTTL(t testing.TB, what string, got, want time.Duration) {
	t.Helper()
	if f.caps.ManualClock {
		if got != want {
			t.Errorf("%s: TTL %v, want %v", what, got, want)
		}
		return
	}
	if got <= 0 || got > want {
		t.Errorf("%s: TTL %v, want in (0, %v]", what, got, want)
	}
}
