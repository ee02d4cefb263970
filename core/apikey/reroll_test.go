package apikey

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/memory"
)

// inBothModes runs test on a manager over the database (with a native
// IncrementOne, and on core's transaction fallback) and on one over a
// storage alone.
func inBothModes(t *testing.T, test func(t *testing.T, e *env)) {
	t.Run("database", func(t *testing.T) { test(t, newEnv(t)) })
	t.Run("fallback", func(t *testing.T) {
		mem := memory.New()
		test(t, newEnvOn(t, mem, mem.WithoutIncrementOne()))
	})
	t.Run("storage", func(t *testing.T) {
		m, _, c := newStoreEnv(t)
		test(t, &env{m: m, clock: c})
	})
}

// oldHashes counts the old hashes stored in the database's rerolledKey
// table; in storage-only mode, where they live in the key, -1.
func (e *env) oldHashes(t testing.TB) int64 {
	t.Helper()
	if e.db == nil {
		return -1
	}
	n, err := e.db.Count(context.Background(), core.ModelRerolledKey)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) reroll(t testing.TB, id int64, grace time.Duration) (string, *Key) {
	t.Helper()
	plain, k, err := e.m.Reroll(context.Background(), id, grace)
	if err != nil {
		t.Fatalf("Reroll: %v", err)
	}
	return plain, k
}

// TestRerollKeepsTheRecord: the new plaintext opens the same record, whose
// counters and settings go on; the old one opens it until its grace ends,
// then answers invalid.
func TestRerollKeepsTheRecord(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		old, k := e.create(t, CreateParams{Prefix: "sk_", Remaining: quota(10), Name: "ci",
			RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 100}})
		for range 2 {
			wantCode(t, e.verify(t, old), "")
		}
		fresh, rk := e.reroll(t, k.ID, time.Hour)
		switch {
		case fresh == old || !strings.HasPrefix(fresh, "sk_") || len(fresh) != len(old):
			t.Fatalf("new plaintext %q, old %q: want a different key with the same prefix and length", fresh, old)
		case rk.ID != k.ID || rk.Hash != keystore.Hash(fresh) || rk.Start != fresh[:StartLength] || rk.Name != "ci":
			t.Fatalf("rerolled key %+v: want id %d, the new hash and start, the same name", rk, k.ID)
		case remaining(t, rk) != 8 || rk.RequestCount != 2:
			t.Fatalf("rerolled key: remaining %d, requestCount %d; want 8 and 2 (the counters go on)", remaining(t, rk), rk.RequestCount)
		}
		r := e.verify(t, fresh)
		wantCode(t, r, "")
		if r.Key.ID != k.ID || remaining(t, r.Key) != 7 {
			t.Fatalf("new key: id %d remaining %d, want %d and 7", r.Key.ID, remaining(t, r.Key), k.ID)
		}
		r = e.verify(t, old)
		wantCode(t, r, "")
		if r.Key.ID != k.ID || remaining(t, r.Key) != 6 || r.Key.RequestCount != 4 {
			t.Fatalf("old key in its grace: id %d remaining %d requestCount %d, want %d, 6 and 4", r.Key.ID, remaining(t, r.Key), r.Key.RequestCount, k.ID)
		}
		e.clock.Advance(time.Hour - time.Millisecond)
		wantCode(t, e.verify(t, old), "")
		e.clock.Advance(time.Millisecond)
		wantCode(t, e.verify(t, old), CodeInvalid)
		wantCode(t, e.verify(t, fresh), "")
		if got := e.get(t, k.ID); remaining(t, got) != 4 {
			t.Fatalf("stored remaining %d, want 4: one unit per admitted verification", remaining(t, got))
		}
		// DeleteExpired forgets old hashes whose grace is over, not the key.
		if n, err := e.m.DeleteExpired(context.Background()); err != nil || n != 0 {
			t.Fatalf("DeleteExpired = %d, %v; want 0 keys", n, err)
		}
		if n := e.oldHashes(t); n > 0 {
			t.Fatalf("%d old hashes left after DeleteExpired, want 0", n)
		}
	})
}

// TestRerollWithoutGrace: the old plaintext stops at once, and no old
// hash is stored.
func TestRerollWithoutGrace(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		old, k := e.create(t, CreateParams{RateLimit: noRateLimit()})
		wantCode(t, e.verify(t, old), "") // remembered, so the next try is a guarded write by the old hash
		fresh, _ := e.reroll(t, k.ID, 0)
		wantCode(t, e.verify(t, old), CodeInvalid)
		wantCode(t, e.verify(t, fresh), "")
		if n := e.oldHashes(t); n > 0 {
			t.Fatalf("%d old hashes stored, want 0", n)
		}
	})
}

// TestRerollTwice: each earlier plaintext keeps its own grace.
func TestRerollTwice(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		first, k := e.create(t, CreateParams{RateLimit: noRateLimit(), Remaining: quota(100)})
		second, _ := e.reroll(t, k.ID, 2*time.Hour)
		e.clock.Advance(time.Hour)
		third, _ := e.reroll(t, k.ID, 2*time.Hour)
		for _, key := range []string{first, second, third} {
			wantCode(t, e.verify(t, key), "")
		}
		e.clock.Advance(time.Hour) // first's grace is over, second's is not
		wantCode(t, e.verify(t, first), CodeInvalid)
		wantCode(t, e.verify(t, second), "")
		e.clock.Advance(time.Hour)
		wantCode(t, e.verify(t, second), CodeInvalid)
		r := e.verify(t, third)
		wantCode(t, r, "")
		if remaining(t, r.Key) != 95 {
			t.Fatalf("remaining %d, want 95", remaining(t, r.Key))
		}
	})
}

// TestRerollRefusesBadInput: before any write.
func TestRerollRefusesBadInput(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		old, k := e.create(t, CreateParams{RateLimit: noRateLimit()})
		ctx := context.Background()
		for _, c := range []struct {
			grace time.Duration
			want  string
		}{{-time.Second, "negative"}, {time.Microsecond, "shorter than a millisecond"}} {
			if _, _, err := e.m.Reroll(ctx, k.ID, c.grace); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Reroll(grace %v): err = %v, want ErrInvalid saying %q", c.grace, err, c.want)
			}
		}
		if _, _, err := e.m.Reroll(ctx, k.ID+1, time.Hour); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Reroll(unknown id): err = %v, want ErrNotFound", err)
		}
		wantCode(t, e.verify(t, old), "")
		if n := e.oldHashes(t); n > 0 {
			t.Fatalf("%d old hashes stored by refused rerolls, want 0", n)
		}
	})
}

// TestRerollDeleteForgetsOldHashes: deleting a key deletes its old hashes,
// which then open nothing.
func TestRerollDeleteForgetsOldHashes(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		old, k := e.create(t, CreateParams{RateLimit: noRateLimit()})
		e.reroll(t, k.ID, time.Hour)
		if ok, err := e.m.Delete(context.Background(), k.ID); !ok || err != nil {
			t.Fatalf("Delete = %v, %v", ok, err)
		}
		wantCode(t, e.verify(t, old), CodeInvalid)
		if n := e.oldHashes(t); n > 0 {
			t.Fatalf("%d old hashes left, want 0", n)
		}
	})
}

// TestRerollCached: a cached copy of the key under its old hash is never
// answered after the reroll, and the old hash stops at the end of its grace.
func TestRerollCached(t *testing.T) {
	cache := memory.NewStorage()
	e := newEnv(t, WithCache(cache, time.Hour), WithKeyStateCache(0))
	old, k := e.create(t, CreateParams{RateLimit: noRateLimit(), Remaining: quota(10)})
	wantCode(t, e.verify(t, old), "") // fills the cache under the old hash
	fresh, _ := e.reroll(t, k.ID, time.Minute)
	if r := e.verify(t, old); !r.Valid || r.Key.Hash != keystore.Hash(fresh) {
		t.Fatalf("old key in its grace: %+v, want valid with the new hash", r)
	}
	e.clock.Advance(time.Minute)
	wantCode(t, e.verify(t, old), CodeInvalid)
	if r := e.verify(t, fresh); !r.Valid || remaining(t, r.Key) != 7 {
		t.Fatalf("new key: %+v, want valid with remaining 7", r)
	}
}

// TestRerollEvent: the observer hears of the reroll, with the new key.
func TestRerollEvent(t *testing.T) {
	var got []Event
	e := newEnv(t, WithObserver(func(_ context.Context, ev Event) { got = append(got, ev) }))
	_, k := e.create(t, CreateParams{RateLimit: noRateLimit()})
	fresh, _ := e.reroll(t, k.ID, time.Second)
	last := got[len(got)-1]
	if last.Kind != Rerolled || last.KeyID != k.ID || last.Key == nil || last.Key.Hash != keystore.Hash(fresh) || last.Outcome() != "rerolled" {
		t.Fatalf("last event %+v, want Rerolled with the new key", last)
	}
}

// TestRerollWithoutTheTable: verification works as before; a reroll with a
// grace period fails with ErrSchema naming the table, one without works.
func TestRerollWithoutTheTable(t *testing.T) {
	mem := memory.New()
	e := newEnvOn(t, mem, schemaFailing{mem, core.ModelRerolledKey})
	old, k := e.create(t, CreateParams{RateLimit: noRateLimit()})
	wantCode(t, e.verify(t, old), "")
	wantCode(t, e.verify(t, "unknown"), CodeInvalid)
	if _, _, err := e.m.Reroll(context.Background(), k.ID, time.Hour); !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), "rerolledKey") {
		t.Fatalf("Reroll with a grace: err = %v, want ErrSchema naming rerolledKey", err)
	}
	wantCode(t, e.verify(t, old), "")
	fresh, _ := e.reroll(t, k.ID, 0)
	wantCode(t, e.verify(t, old), CodeInvalid)
	wantCode(t, e.verify(t, fresh), "")
}

// schemaFailing fails the schema check of one model with ErrSchema.
type schemaFailing struct {
	*memory.Memory
	model string
}

func (s schemaFailing) CheckSchema(_ context.Context, t *driver.Table) error {
	if t.Model == s.model {
		return &core.Error{Op: "CheckSchema", Model: t.Model, Kind: core.ErrSchema}
	}
	return nil
}

// TestRerollNeedsRerollable: a storage whose Claim does not declare that
// it checks the hash presented cannot reroll, since it would let the old
// plaintext work for ever.
func TestRerollNeedsRerollable(t *testing.T) {
	s := memory.NewStorage()
	m, err := NewStorageOnly(claimOnly{s, s}) // keystore.Claimer, not keystore.Rerollable
	if err != nil {
		t.Fatal(err)
	}
	_, k, err := m.Create(context.Background(), CreateParams{ReferenceID: "u", RateLimit: noRateLimit()})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Reroll(context.Background(), k.ID, time.Hour); !errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "keystore.Rerollable") {
		t.Fatalf("Reroll on a storage without keystore.Rerollable: err = %v, want ErrUnsupported naming keystore.Rerollable", err)
	}
}

// TestRerollUnderConcurrentVerification rerolls a key while 100 callers
// verify it, half with the old plaintext and half, once it exists, with the
// new one: exactly the quota is admitted, and the stored counter agrees.
func TestRerollUnderConcurrentVerification(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		const callers, q = 100, 60
		old, k := e.create(t, CreateParams{RateLimit: noRateLimit(), Remaining: quota(q)})
		var fresh atomic.Pointer[string]
		rerolled := make(chan struct{})
		var admitted, exceeded atomic.Int64
		testrace.Release(callers+1, func(i int) {
			if i == callers {
				defer close(rerolled)
				p, _, err := e.m.Reroll(context.Background(), k.ID, time.Hour)
				if err != nil {
					t.Errorf("Reroll: %v", err)
				}
				fresh.Store(&p)
				return
			}
			key := old
			if i%2 == 1 {
				<-rerolled
				key = *fresh.Load()
			}
			r, err := e.m.Verify(context.Background(), key)
			switch {
			case err != nil:
				t.Errorf("Verify: %v", err)
			case r.Valid:
				admitted.Add(1)
			case r.Code == CodeUsageExceeded:
				exceeded.Add(1)
			default:
				t.Errorf("caller %d: code %s", i, r.Code)
			}
		})
		if admitted.Load() != q || exceeded.Load() != callers-q {
			t.Fatalf("%d admitted, %d usage exceeded; want %d and %d", admitted.Load(), exceeded.Load(), q, callers-q)
		}
		if got := e.get(t, k.ID); remaining(t, got) != 0 {
			t.Fatalf("stored remaining %d, want 0", remaining(t, got))
		}
	})
}

// TestRerollWithoutTheModel: a DB whose schema leaves the optional models
// out verifies as before and reports the features as unavailable.
func TestRerollWithoutTheModel(t *testing.T) {
	mem := memory.New()
	db, err := core.New(mem, core.WithSchema(core.MustSchema(core.Naming{}).Without(core.ModelRerolledKey, core.ModelAPIKeyLimit)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	old, k, err := m.Create(ctx, CreateParams{ReferenceID: "u", RateLimit: noRateLimit()})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := m.Verify(ctx, "unknown", LimitCost("tokens", 1)); err != nil || r.Code != CodeInvalid {
		t.Fatalf("Verify(unknown) = %+v, %v; want INVALID_API_KEY", r, err)
	}
	if _, _, err := m.Reroll(ctx, k.ID, time.Hour); !errors.Is(err, core.ErrSchema) {
		t.Fatalf("Reroll with a grace: err = %v, want ErrSchema", err)
	}
	if _, _, err := m.Create(ctx, CreateParams{ReferenceID: "u", Limits: map[string]NamedLimit{"x": {Max: 1, Window: time.Second}}}); !errors.Is(err, core.ErrSchema) {
		t.Fatalf("Create with limits: err = %v, want ErrSchema", err)
	}
	if got, err := m.Get(ctx, k.ID); err != nil || got.ID != k.ID {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if r, err := m.Verify(ctx, old); err != nil || !r.Valid {
		t.Fatalf("Verify = %+v, %v; want valid", r, err)
	}
}
