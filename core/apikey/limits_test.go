package apikey

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// TestNamedLimits: a verification spends the named limits it names, with
// their costs, together with the key's quota; a limit without room denies
// it with RATE_LIMITED naming the limit, and nothing is spent anywhere.
func TestNamedLimits(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		key, k := e.create(t, CreateParams{Remaining: quota(100), RateLimit: noRateLimit(), Limits: map[string]NamedLimit{
			"requests": {Max: 3, Window: time.Minute},
			"tokens":   {Max: 100, Window: time.Hour},
		}})
		if got := k.Limits["tokens"]; got.Max != 100 || got.Window != time.Hour || got.Count != 0 {
			t.Fatalf("created key's tokens limit %+v", got)
		}
		spend := func(tokens int64) Result {
			return e.verify(t, key, LimitCost("requests", 1), LimitCost("tokens", tokens))
		}
		r := spend(60)
		wantCode(t, r, "")
		if u := r.Key.Limits["tokens"]; u.Count != 60 || !u.WindowStart.Equal(epoch) || r.Key.Limits["requests"].Count != 1 {
			t.Fatalf("after the first verification: %+v", r.Key.Limits)
		}
		r = spend(50) // 110 tokens: over the limit
		wantCode(t, r, CodeRateLimited)
		if r.DeniedBy != "limit:tokens" || r.TryAgainIn != time.Hour {
			t.Fatalf("denied by %q, try again in %v; want limit:tokens, 1h", r.DeniedBy, r.TryAgainIn)
		}
		wantCode(t, spend(40), "")
		wantCode(t, e.verify(t, key, LimitCost("requests", 1)), "")
		r = spend(0) // both full: the first in name order denies
		wantCode(t, r, CodeRateLimited)
		if r.DeniedBy != "limit:requests" {
			t.Fatalf("denied by %q, want limit:requests", r.DeniedBy)
		}
		got := e.get(t, k.ID)
		if remaining(t, got) != 97 || got.Limits["tokens"].Count != 100 || got.Limits["requests"].Count != 3 {
			t.Fatalf("stored: remaining %d, limits %+v; want 97, tokens 100, requests 3 (denials spend nothing)", remaining(t, got), got.Limits)
		}
		// Verifications that name no limit are not limited by them.
		wantCode(t, e.verify(t, key), "")
		// A name the key lacks limits nothing.
		wantCode(t, e.verify(t, key, LimitCost("images", 5)), "")
		// The windows open again.
		e.clock.Advance(time.Minute)
		wantCode(t, e.verify(t, key, LimitCost("requests", 3)), "")
		wantCode(t, e.verify(t, key, LimitCost("requests", 1)), CodeRateLimited)
		e.clock.Advance(time.Hour)
		wantCode(t, spend(100), "")

		// Update replaces the limits; one that stays keeps its counter.
		u, err := e.m.Update(ctx, k.ID, UpdateParams{Limits: map[string]NamedLimit{"tokens": {Max: 150, Window: time.Hour}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(u.Limits) != 1 || u.Limits["tokens"].Max != 150 || u.Limits["tokens"].Count != 100 {
			t.Fatalf("updated limits %+v, want tokens alone, max 150, count 100", u.Limits)
		}
		wantCode(t, e.verify(t, key, LimitCost("tokens", 50)), "")
		wantCode(t, e.verify(t, key, LimitCost("tokens", 1)), CodeRateLimited)
		wantCode(t, e.verify(t, key, LimitCost("requests", 100)), "") // gone: limits nothing
		if _, err := e.m.Update(ctx, k.ID, UpdateParams{Limits: map[string]NamedLimit{}}); err != nil {
			t.Fatal(err)
		}
		if got := e.get(t, k.ID); len(got.Limits) != 0 {
			t.Fatalf("limits after removing them all: %+v", got.Limits)
		}
		wantCode(t, e.verify(t, key, LimitCost("tokens", 1000)), "")
	})
}

// TestNamedLimitsRefuseBadInput: before any write.
func TestNamedLimitsRefuseBadInput(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		for _, c := range []struct {
			limits map[string]NamedLimit
			want   string
		}{
			{map[string]NamedLimit{"": {Max: 1, Window: time.Second}}, "must be 1 to 64 bytes"},
			{map[string]NamedLimit{"a b": {Max: 1, Window: time.Second}}, "only letters"},
			{map[string]NamedLimit{"x": {Max: -1, Window: time.Second}}, "negative"},
			{map[string]NamedLimit{"x": {Max: 1, Window: time.Microsecond}}, "whole number of milliseconds"},
		} {
			if _, _, err := e.m.Create(ctx, CreateParams{ReferenceID: "u", Limits: c.limits}); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Create(%v): err = %v, want ErrInvalid saying %q", c.limits, err, c.want)
			}
		}
		key, _ := e.create(t, CreateParams{RateLimit: noRateLimit()})
		for _, opts := range [][]VerifyOption{
			{LimitCost("x", -1)},
			{LimitCost("a/b", 1)},
			{LimitCost("x", 1), LimitCost("x", 2)},
		} {
			if _, err := e.m.Verify(ctx, key, opts...); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("Verify with bad LimitCost: err = %v, want ErrInvalid", err)
			}
		}
	})
}

// TestNamedLimitsUnderConcurrency: 100 callers each spend 7 tokens of a
// limit of 100 at once: exactly 14 are admitted, and the key's quota and
// the limit's counter agree.
func TestNamedLimitsUnderConcurrency(t *testing.T) {
	const callers, cost, max = 100, 7, 100
	inBothModes(t, func(t *testing.T, e *env) {
		if e.db != nil {
			// Every caller reads the limit before any writes: all decide
			// from one snapshot, so only the guarded writes keep the count.
			g := &gates{}
			e = newEnvOn(t, e.mem, limitReadGate{e.mem, g})
			g.p.Store(newReadGate(callers))
		}
		key, k := e.create(t, CreateParams{Remaining: quota(1000), RateLimit: noRateLimit(),
			Limits: map[string]NamedLimit{"tokens": {Max: max, Window: time.Hour}}})
		var admitted, limited atomic.Int64
		release(callers, func(int) {
			r, err := e.m.Verify(context.Background(), key, LimitCost("tokens", cost))
			switch {
			case err != nil:
				t.Errorf("Verify: %v", err)
			case r.Valid:
				admitted.Add(1)
			case r.Code == CodeRateLimited && r.DeniedBy == "limit:tokens":
				limited.Add(1)
			default:
				t.Errorf("answer %s (denied by %q)", r.Code, r.DeniedBy)
			}
		})
		if admitted.Load() != max/cost || limited.Load() != callers-max/cost {
			t.Fatalf("%d admitted, %d limited; want %d and %d", admitted.Load(), limited.Load(), max/cost, callers-max/cost)
		}
		got := e.get(t, k.ID)
		if remaining(t, got) != 1000-max/cost || got.Limits["tokens"].Count != max/cost*cost {
			t.Fatalf("stored remaining %d, tokens %d; want %d and %d", remaining(t, got), got.Limits["tokens"].Count, 1000-max/cost, max/cost*cost)
		}
	})
}

// limitReadGate holds every read of named limits at a gate.
type limitReadGate struct {
	*memory.Memory
	g *gates
}

func (a limitReadGate) FindMany(ctx context.Context, t *driver.Table, where []driver.Where, o driver.FindOptions) ([]driver.Record, error) {
	recs, err := a.Memory.FindMany(ctx, t, where, o)
	if t.Model == core.ModelAPIKeyLimit {
		a.g.wait()
	}
	return recs, err
}

// TestNamedLimitsWithoutTheTable: a database without the apikeyLimit table
// verifies as before; creating a key with limits names the table.
func TestNamedLimitsWithoutTheTable(t *testing.T) {
	e := newEnv(t)
	e2 := newEnvOn(t, e.mem, schemaFailing{e.mem, core.ModelAPIKeyLimit})
	key, _ := e2.create(t, CreateParams{RateLimit: noRateLimit()})
	wantCode(t, e2.verify(t, key, LimitCost("tokens", 5)), "")
	if _, _, err := e2.m.Create(context.Background(), CreateParams{ReferenceID: "u", Limits: map[string]NamedLimit{"tokens": {Max: 1, Window: time.Second}}}); !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), "apikeyLimit") {
		t.Fatalf("Create with limits: err = %v, want ErrSchema naming apikeyLimit", err)
	}
}

// TestOwnerLimits: the keys of one owner share the owner's named limits,
// spent together with each key's own budget: a denial on either side
// spends nothing on the other; in database and storage-only mode alike.
func TestOwnerLimits(t *testing.T) {
	sm, _, sc := newStoreEnv(t)
	for name, e := range map[string]*env{"database": newEnv(t), "storage-only": {m: sm, clock: sc}} {
		t.Run(name, func(t *testing.T) { testOwnerLimits(t, e) })
	}
	ctx := context.Background()
	s := memory.NewStorage()
	m, err := NewStorageOnly(claimerOnly{s, s})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetOwnerLimits(ctx, "team-1", nil); !errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "keystore.OwnerSharing") {
		t.Fatalf("SetOwnerLimits on a storage without keystore.OwnerSharing: err = %v, want ErrUnsupported naming it", err)
	}
	if _, err := NewStorageOnly(s, WithStoragePrefix("app{")); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("a prefix with an open hash tag: err = %v, want ErrInvalid", err)
	}
	if _, err := NewStorageOnly(s, WithStoragePrefix("{app}:")); err != nil {
		t.Fatalf("a prefix with a whole hash tag: %v", err)
	}
}

// claimerOnly is a storage that claims but declares no optional capability.
type claimerOnly struct {
	driver.SecondaryStorage
	keystore.Claimer
}

func testOwnerLimits(t *testing.T, e *env) {
	ctx := context.Background()
	if err := e.m.SetOwnerLimits(ctx, "team-1", map[string]NamedLimit{"tokens": {Max: 100, Window: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	a, ka := e.create(t, CreateParams{ReferenceID: "team-1", Remaining: quota(2), RateLimit: noRateLimit()})
	b, kb := e.create(t, CreateParams{ReferenceID: "team-1", RateLimit: noRateLimit(),
		Limits: map[string]NamedLimit{"tokens": {Max: 30, Window: time.Hour}}})
	other, _ := e.create(t, CreateParams{ReferenceID: "team-2", RateLimit: noRateLimit()})
	tokens := func(n int64) VerifyOption { return LimitCost("tokens", n) }

	wantCode(t, e.verify(t, a, tokens(40)), "")
	wantCode(t, e.verify(t, b, tokens(30)), "")
	r := e.verify(t, b, tokens(1)) // the key's own 30 are spent
	if r.Code != CodeRateLimited || r.DeniedBy != "limit:tokens" {
		t.Fatalf("key b over its own limit: %+v, want RATE_LIMITED on its own tokens", r)
	}
	r = e.verify(t, a, tokens(31)) // 70 + 31 > 100
	if r.Code != CodeRateLimited || r.DeniedBy != "ownerLimit:tokens" {
		t.Fatalf("key a over the owner's limit: %+v, want RATE_LIMITED on the owner's tokens", r)
	}
	wantCode(t, e.verify(t, a, tokens(30)), "")
	wantCode(t, e.verify(t, a, tokens(0)), CodeUsageExceeded) // a's quota is spent: the owner's tokens are not
	wantCode(t, e.verify(t, other, tokens(500)), "")          // another owner's key: not limited
	got, err := e.m.OwnerLimits(ctx, "team-1")
	if err != nil {
		t.Fatal(err)
	}
	if got["tokens"].Count != 100 || got["tokens"].Max != 100 {
		t.Fatalf("owner tokens %+v, want 100 of 100", got["tokens"])
	}
	if remaining(t, e.get(t, ka.ID)) != 0 || e.get(t, kb.ID).Limits["tokens"].Count != 30 {
		t.Fatal("the keys' own budgets are not as spent")
	}
	// Replacing the owner's limits keeps the counter of one that stays.
	if err := e.m.SetOwnerLimits(ctx, "team-1", map[string]NamedLimit{"tokens": {Max: 130, Window: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.verify(t, b, LimitCost("images", 1)), "")
	if got, _ := e.m.OwnerLimits(ctx, "team-1"); got["tokens"].Count != 100 || got["tokens"].Max != 130 {
		t.Fatalf("after raising the max: %+v", got["tokens"])
	}
	// The window ends: the owner's counter opens a new one.
	e.clock.Advance(time.Hour)
	wantCode(t, e.verify(t, b, tokens(130)), CodeRateLimited) // b's own 30
	wantCode(t, e.verify(t, other, tokens(1)), "")
	if err := e.m.SetOwnerLimits(ctx, "team-1", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := e.m.OwnerLimits(ctx, "team-1"); err != nil || len(got) != 0 {
		t.Fatalf("after removing the owner's limits: %+v, %v", got, err)
	}
	wantCode(t, e.verify(t, b, tokens(30)), "")
	if err := e.m.SetOwnerLimits(ctx, "", nil); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("SetOwnerLimits without an owner: err = %v, want ErrInvalid", err)
	}
}

// racingFirstOwners is core/memory's Storage with the owner's record held
// back so that two first SetOwnerLimits calls interleave as badly as they
// can: both patch and find no record before either makes one; the first
// then makes it, and the second makes its own only after a claim has
// spent from the first's (the test closes spent).
type racingFirstOwners struct {
	*memory.Storage
	owner         string
	patched       sync.WaitGroup // the first two patches of the owner's record
	made          chan struct{}  // closed once the first record is stored
	spent         chan struct{}  // closed by the test after a claim spent from it
	patches, sets atomic.Int32
}

func (s *racingFirstOwners) Patch(ctx context.Context, key string, f map[string]any) (keystore.Key, bool, error) {
	after, ok, err := s.Storage.Patch(ctx, key, f)
	if key == s.owner && s.patches.Add(1) <= 2 {
		// Neither returns until both have patched: both find no record.
		s.patched.Done()
		s.patched.Wait()
	}
	return after, ok, err
}

// hold lets the first maker of the owner's record through and holds the
// second until a claim has spent from the first's record.
func (s *racingFirstOwners) hold(key string) (done func()) {
	if key != s.owner {
		return func() {}
	}
	if s.sets.Add(1) == 1 {
		return func() { close(s.made) }
	}
	<-s.spent
	return func() {}
}

func (s *racingFirstOwners) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	defer s.hold(key)()
	return s.Storage.Set(ctx, key, value, ttl)
}

func (s *racingFirstOwners) Create(ctx context.Context, key, value string) (bool, error) {
	defer s.hold(key)()
	return s.Storage.Create(ctx, key, value)
}

// setOnly hides Create: the storage without keystore.Creator.
type setOnly struct{ *racingFirstOwners }

func (setOnly) Create() {}

// TestFirstOwnerLimitsRace: of two first SetOwnerLimits calls at once, the
// later patches the record the earlier made, so a claim's spend from it in
// between stays counted. Without keystore.Creator the later call replaces
// the record and the spend is lost, which the second subtest shows: the
// check can fail.
func TestFirstOwnerLimitsRace(t *testing.T) {
	for _, withCreator := range []bool{true, false} {
		t.Run(fmt.Sprintf("creator=%v", withCreator), func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			race := &racingFirstOwners{Storage: memory.NewStorage(memory.WithClock(c.Now)),
				made: make(chan struct{}), spent: make(chan struct{})}
			race.patched.Add(2)
			var store driver.SecondaryStorage = race
			if !withCreator {
				store = setOnly{race}
			}
			if _, ok := store.(keystore.Creator); ok != withCreator {
				t.Fatalf("store %T is a keystore.Creator: %v", store, ok)
			}
			m, err := NewStorageOnly(store, WithClock(c.Now))
			if err != nil {
				t.Fatal(err)
			}
			plaintext, _, err := m.Create(ctx, CreateParams{ReferenceID: "team"})
			if err != nil {
				t.Fatal(err)
			}
			race.owner = m.store.(*storageStore).ownerKey(Hash("team"))
			limits := map[string]NamedLimit{"requests": {Max: 5, Window: time.Minute}}
			errs := make(chan error, 2)
			for range 2 {
				go func() { errs <- m.SetOwnerLimits(ctx, "team", limits) }()
			}
			<-race.made
			res, err := m.Verify(ctx, plaintext, LimitCost("requests", 1))
			if err != nil || !res.Valid {
				t.Fatalf("Verify = %+v, %v", res, err)
			}
			close(race.spent)
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			usage, err := m.OwnerLimits(ctx, "team")
			if err != nil {
				t.Fatal(err)
			}
			got := usage["requests"].Count
			switch {
			case withCreator && got != 1:
				t.Fatalf("the owner's requests count %d after one claim; want 1: the later first call replaced the record", got)
			case !withCreator && got != 0:
				t.Fatalf("without keystore.Creator the count is %d; this interleaving was expected to lose the claim's spend (0), showing the check can fail", got)
			}
		})
	}
}
