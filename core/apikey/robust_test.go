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
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/memory"
)

// TestZeroManager calls every method of a zero and of a nil Manager: each
// answers a clear error, none panics.
func TestZeroManager(t *testing.T) {
	ctx := context.Background()
	for name, m := range map[string]*Manager{"zero": {}, "nil": nil} {
		calls := map[string]func() error{
			"Verify":        func() error { _, err := m.Verify(ctx, "k"); return err },
			"Create":        func() error { _, _, err := m.Create(ctx, CreateParams{ReferenceID: "u"}); return err },
			"Get":           func() error { _, err := m.Get(ctx, 1); return err },
			"List":          func() error { _, err := m.List(ctx, "u"); return err },
			"Update":        func() error { _, err := m.Update(ctx, 1, UpdateParams{Name: new(string)}); return err },
			"Delete":        func() error { _, err := m.Delete(ctx, 1); return err },
			"DeleteExpired": func() error { _, err := m.DeleteExpired(ctx); return err },
			"CheckSchema":   func() error { return m.CheckSchema(ctx) },
			"CheckVerify":   func() error { return m.CheckVerify() },
		}
		for op, call := range calls {
			t.Run(name+"/"+op, func(t *testing.T) {
				err := call()
				if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "not initialised") || !strings.Contains(err.Error(), op) {
					t.Fatalf("err = %v, want ErrInvalid naming %s and saying the Manager is not initialised", err, op)
				}
			})
		}
	}
}

// TestNilsAreRefused passes nil where a value is needed: a clear error,
// before anything is written, and no panic.
func TestNilsAreRefused(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	key, _ := e.create(t, CreateParams{RateLimit: noRateLimit()})
	var nilStore *memory.Storage
	cases := map[string]struct {
		call func() error
		want string
	}{
		"New(&core.DB{})": {func() error { _, err := New(&core.DB{}); return err }, "not initialised"},
		"New with a nil option": {func() error {
			_, err := New(e.db, WithMaxAttempts(3), nil)
			return err
		}, "option 2 of 2 is nil"},
		"NewStorageOnly with a nil option": {func() error {
			_, err := NewStorageOnly(memory.NewStorage(), nil)
			return err
		}, "option 1 of 1 is nil"},
		"Verify with a nil option": {func() error { _, err := e.m.Verify(ctx, key, nil); return err }, "option 1 of 1 is nil"},
		"WithCache(nil)": {func() error {
			_, err := New(e.db, WithCache(nil, time.Hour))
			return err
		}, "WithCache: nil storage"},
		"WithCache(typed nil)": {func() error {
			_, err := New(e.db, WithCache(nilStore, time.Hour))
			return err
		}, "WithCache: nil storage"},
		"NewStorageOnly(typed nil)": {func() error { _, err := NewStorageOnly(nilStore); return err }, "nil storage"},
		"NewStorageOnly(nil)":       {func() error { _, err := NewStorageOnly(nil); return err }, "nil storage"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			before := e.mem.Calls()
			err := c.call()
			if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalid saying %q", err, c.want)
			}
			if calls := e.mem.Calls() - before; calls != 0 {
				t.Fatalf("%d database calls before the error", calls)
			}
		})
	}
	t.Run("CheckVerify with a nil option", func(t *testing.T) {
		if err := e.m.CheckVerify(Cost(1), nil); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "option 2 of 2 is nil") {
			t.Fatalf("err = %v, want ErrInvalid naming the nil option", err)
		}
	})
}

// committingAdapter commits every IncrementOne and then, before answering,
// lets the caller's context end: the write happened, the caller sees an error.
type committingAdapter struct {
	*memory.Memory
	end func() // ends the caller's context
}

func (a *committingAdapter) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	if _, err := a.Memory.IncrementOne(ctx, t, where, inc, set); err != nil {
		return nil, err
	}
	a.end()
	<-ctx.Done()
	return nil, ctx.Err()
}

// failingRead fails every FindOne with err(ctx), before any write.
type failingRead struct {
	*memory.Memory
	err func(ctx context.Context) error
}

func (a failingRead) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	return nil, a.err(ctx)
}

// TestOutcomeUnknown tells a verification whose write committed while its
// context ended (quota spent, error wrapping ErrOutcomeUnknown) from
// failures before any write (nothing spent, no ErrOutcomeUnknown).
func TestOutcomeUnknown(t *testing.T) {
	errDown := errors.New("database down")
	cases := []struct {
		name    string
		adapter func(mem *memory.Memory, cancel context.CancelFunc) driver.Adapter
		ctx     func() (context.Context, context.CancelFunc)
		want    error
		unknown bool
	}{
		{
			name: "cancelled while the write commits",
			adapter: func(mem *memory.Memory, cancel context.CancelFunc) driver.Adapter {
				return &committingAdapter{mem, cancel}
			},
			want: context.Canceled, unknown: true,
		},
		{
			name: "deadline passes while the write commits",
			adapter: func(mem *memory.Memory, _ context.CancelFunc) driver.Adapter {
				return &committingAdapter{mem, func() {}}
			},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			},
			want: context.DeadlineExceeded, unknown: true,
		},
		{
			name: "cancelled during the read",
			adapter: func(mem *memory.Memory, cancel context.CancelFunc) driver.Adapter {
				return failingRead{mem, func(ctx context.Context) error { cancel(); return ctx.Err() }}
			},
			want: context.Canceled,
		},
		{
			name: "the read fails",
			adapter: func(mem *memory.Memory, _ context.CancelFunc) driver.Adapter {
				return failingRead{mem, func(context.Context) error { return errDown }}
			},
			want: errDown,
		},
		{
			name:    "cancelled before the call",
			adapter: func(mem *memory.Memory, cancel context.CancelFunc) driver.Adapter { cancel(); return mem },
			want:    context.Canceled,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mk := c.ctx
			if mk == nil {
				mk = func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }
			}
			ctx, cancel := mk()
			defer cancel()
			mem := memory.New()
			setup := newEnvOn(t, mem, mem) // creates the key through a plain adapter
			key, k := setup.create(t, CreateParams{Remaining: quota(5), RateLimit: noRateLimit()})
			e := newEnvOn(t, mem, c.adapter(mem, cancel))
			_, err := e.m.Verify(ctx, key)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want one wrapping %v", err, c.want)
			}
			if got := errors.Is(err, ErrOutcomeUnknown); got != c.unknown {
				t.Fatalf("errors.Is(err, ErrOutcomeUnknown) = %v, want %v (err: %v)", got, c.unknown, err)
			}
			spent := 5 - remaining(t, setup.get(t, k.ID))
			if want := map[bool]int64{true: 1, false: 0}[c.unknown]; spent != want {
				t.Fatalf("%d units spent, want %d", spent, want)
			}
		})
	}
}

// committingClaimer is the storage-only counterpart of committingAdapter.
type committingClaimer struct {
	*memory.Storage
	end func()
}

func (c *committingClaimer) Claim(ctx context.Context, key string, req keystore.Request) (keystore.Result, error) {
	if _, err := c.Storage.Claim(ctx, key, req); err != nil {
		return keystore.Result{}, err
	}
	c.end()
	return keystore.Result{}, ctx.Err()
}

func TestOutcomeUnknownStorageOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &committingClaimer{Storage: memory.NewStorage(), end: cancel}
	m, err := NewStorageOnly(store)
	if err != nil {
		t.Fatal(err)
	}
	key, k, err := m.Create(context.Background(), CreateParams{ReferenceID: "u", Remaining: quota(5), RateLimit: noRateLimit()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Verify(ctx, key)
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrOutcomeUnknown and context.Canceled", err)
	}
	after, err := m.Get(context.Background(), k.ID)
	if err != nil || remaining(t, after) != 4 {
		t.Fatalf("after: %+v, %v; want remaining 4, the claim having been applied", after, err)
	}
	if _, err := m.Verify(ctx, key); errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("with the context already ended: err = %v, want context.Canceled without ErrOutcomeUnknown", err)
	}
}

// schemaDouble is the memory store with a schema check of the apikey table
// that fails a given number of times, then passes; the optional
// rerolledKey, apikeyLimit and apikeyRefill tables always pass and are not
// counted.
type schemaDouble struct {
	*memory.Memory
	failures atomic.Int64 // checks left to fail
	checks   atomic.Int64
	mu       sync.Mutex
	tables   map[string]bool
}

func (s *schemaDouble) CheckSchema(ctx context.Context, t *driver.Table) error {
	s.mu.Lock()
	s.tables[t.Name] = true
	s.mu.Unlock()
	if t.Model == core.ModelRerolledKey || t.Model == core.ModelAPIKeyLimit || t.Model == core.ModelAPIKeyRefill {
		return nil
	}
	s.checks.Add(1)
	if s.failures.Add(-1) >= 0 {
		return fmt.Errorf("%w: table %s has no unique index on column key", core.ErrSchema, t.Name)
	}
	return nil
}

var _ driver.SchemaChecker = (*schemaDouble)(nil)

// TestSchemaCheckedBeforeFirstUse: the manager runs the start-up check
// before its first verification and creation, returns its failure before
// touching the table, tries again on the next call, and once it has passed
// never runs it again on its own.
func TestSchemaCheckedBeforeFirstUse(t *testing.T) {
	ctx := context.Background()
	s := &schemaDouble{Memory: memory.New(), tables: map[string]bool{}}
	s.failures.Store(2)
	e := newEnvOn(t, s.Memory, s)

	if _, err := e.m.Verify(ctx, "some-key"); !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), "unique index") {
		t.Fatalf("Verify on an unfit table: err = %v, want ErrSchema naming the missing index", err)
	}
	if _, _, err := e.m.Create(ctx, CreateParams{ReferenceID: "u"}); !errors.Is(err, core.ErrSchema) {
		t.Fatalf("Create on an unfit table: err = %v, want ErrSchema", err)
	}
	if calls := s.Calls(); calls != 0 {
		t.Fatalf("%d calls reached the table before the check passed", calls)
	}
	if n := s.checks.Load(); n != 2 {
		t.Fatalf("%d checks, want 2: a failure is not remembered", n)
	}
	key, _ := e.create(t, CreateParams{RateLimit: noRateLimit()}) // the third check passes
	for range 3 {
		wantCode(t, e.verify(t, key), "")
	}
	e.create(t, CreateParams{})
	if n := s.checks.Load(); n != 3 {
		t.Fatalf("%d checks, want 3: a pass is remembered", n)
	}
	if len(s.tables) != 4 || !s.tables["apikey"] || !s.tables["rerolled_key"] || !s.tables["apikey_limit"] || !s.tables["apikey_refill"] {
		t.Fatalf("checked tables %v, want apikey, rerolled_key, apikey_limit and apikey_refill", s.tables)
	}
	// Called by the user, the check runs afresh.
	s.failures.Store(1)
	if err := e.m.CheckSchema(ctx); !errors.Is(err, core.ErrSchema) {
		t.Fatalf("CheckSchema: err = %v, want ErrSchema", err)
	}
	if err := e.m.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema: %v", err)
	}
	if n := s.checks.Load(); n != 5 {
		t.Fatalf("%d checks, want 5", n)
	}
}

// TestSchemaCheckedOnceUnderConcurrency releases many first verifications
// at once: the check runs once, and every one of them waits for it.
func TestSchemaCheckedOnceUnderConcurrency(t *testing.T) {
	s := &schemaDouble{Memory: memory.New(), tables: map[string]bool{}}
	plain := newEnvOn(t, s.Memory, s.Memory) // creates the key without running the check
	key, _ := plain.create(t, CreateParams{RateLimit: noRateLimit()})
	e := newEnvOn(t, s.Memory, s)
	var valid atomic.Int64
	testrace.Release(32, func(int) {
		if r, err := e.m.Verify(context.Background(), key); err != nil {
			t.Errorf("Verify: %v", err)
		} else if r.Valid {
			valid.Add(1)
		}
	})
	if n := s.checks.Load(); n != 1 || valid.Load() != 32 {
		t.Fatalf("%d checks and %d valid answers, want 1 and 32", n, valid.Load())
	}
}

// TestSchemaCheckNotInStorageOnlyMode: there is no table to check.
func TestSchemaCheckNotInStorageOnlyMode(t *testing.T) {
	m, _, _ := newStoreEnv(t)
	if err := m.CheckSchema(context.Background()); err != nil {
		t.Fatalf("CheckSchema in storage-only mode: %v", err)
	}
}
