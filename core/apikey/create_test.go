package apikey

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

func TestCreateInvalidInput(t *testing.T) {
	ok := CreateParams{ReferenceID: "u"}
	cases := []struct {
		name string
		edit func(*CreateParams)
		want string // part of the message naming what is wrong
	}{
		{"no reference", func(p *CreateParams) { p.ReferenceID = "" }, "ReferenceID"},
		{"prefix with space", func(p *CreateParams) { p.Prefix = "sk live" }, "prefix"},
		{"prefix too long", func(p *CreateParams) { p.Prefix = strings.Repeat("a", MaxPrefixLength+1) }, "prefix"},
		{"name too long", func(p *CreateParams) { p.Name = strings.Repeat("n", MaxNameLength+1) }, "Name"},
		{"negative expiry", func(p *CreateParams) { p.ExpiresIn = -time.Second }, "ExpiresIn"},
		{"negative quota", func(p *CreateParams) { p.Remaining = quota(-1) }, "Remaining"},
		{"refill interval only", func(p *CreateParams) { p.Remaining = quota(1); p.Refill = Refill{Interval: time.Hour} }, "both"},
		{"refill amount only", func(p *CreateParams) { p.Remaining = quota(1); p.Refill = Refill{Amount: 5} }, "both"},
		{"refill negative amount", func(p *CreateParams) { p.Remaining = quota(1); p.Refill = Refill{Interval: time.Hour, Amount: -5} }, "Amount"},
		{"refill sub-millisecond", func(p *CreateParams) {
			p.Remaining = quota(1)
			p.Refill = Refill{Interval: time.Microsecond, Amount: 5}
		}, "Interval"},
		{"refill without quota", func(p *CreateParams) { p.Refill = Refill{Interval: time.Hour, Amount: 5} }, "Remaining"},
		{"rate limit zero window", func(p *CreateParams) { p.RateLimit = &RateLimit{Enabled: true, Max: 5} }, "Window"},
		{"rate limit negative max", func(p *CreateParams) { p.RateLimit = &RateLimit{Enabled: true, Window: time.Second, Max: -1} }, "Max"},
		{"metadata not JSON", func(p *CreateParams) { p.Metadata = map[string]any{"f": func() {}} }, "Metadata"},
		{"empty permission resource", func(p *CreateParams) { p.Permissions = map[string][]string{"": {"read"}} }, "Permissions"},
		{"empty permission action", func(p *CreateParams) { p.Permissions = map[string][]string{"files": {""}} }, "Permissions"},
	}
	e := newEnv(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ok
			c.edit(&p)
			_, _, err := e.m.Create(context.Background(), p)
			if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want core.ErrInvalid naming %q", err, c.want)
			}
		})
	}
	if n, err := e.db.Count(context.Background(), "apikey"); err != nil || n != 0 {
		t.Fatalf("%d keys stored after invalid creates (err %v), want 0", n, err)
	}
}

func TestCreateDefaultsAndFields(t *testing.T) {
	e := newEnv(t)
	_, k := e.create(t, CreateParams{})
	if k.RateLimit != defaultRateLimit || !k.Enabled || k.Remaining != nil || k.ConfigID != "default" || !k.ExpiresAt.IsZero() {
		t.Fatalf("defaults: %+v", k)
	}
	meta := map[string]any{"plan": "pro", "seats": float64(3)}
	perms := map[string][]string{"files": {"read", "write"}}
	_, k = e.create(t, CreateParams{
		ReferenceID: "org-9", ConfigID: "cfg", Name: "ci", ExpiresIn: time.Hour,
		Remaining: quota(10), Refill: Refill{Interval: time.Hour, Amount: 10},
		RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 3},
		Disabled:  true, Metadata: meta, Permissions: perms,
	})
	got := e.get(t, k.ID)
	if got.Name != "ci" || got.ConfigID != "cfg" || got.ReferenceID != "org-9" || got.Enabled ||
		remaining(t, got) != 10 || got.Refill != (Refill{Interval: time.Hour, Amount: 10}) ||
		got.RateLimit != (RateLimit{true, time.Minute, 3}) || !got.ExpiresAt.Equal(epoch.Add(time.Hour)) ||
		!got.CreatedAt.Equal(epoch) || !reflect.DeepEqual(got.Metadata, meta) || !reflect.DeepEqual(got.Permissions, perms) {
		t.Fatalf("stored key = %+v", got)
	}
}

func TestManageKeys(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	_, a := e.create(t, CreateParams{ReferenceID: "alice", ExpiresIn: time.Minute})
	_, b := e.create(t, CreateParams{ReferenceID: "alice"})
	_, c := e.create(t, CreateParams{ReferenceID: "bob", ExpiresIn: time.Hour})

	list, err := e.m.List(ctx, "alice")
	if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Fatalf("List(alice) = %v, %v; want keys %d and %d", list, err, a.ID, b.ID)
	}

	e.clock.Advance(time.Second)
	name, off := "renamed", false
	u, err := e.m.Update(ctx, b.ID, UpdateParams{Name: &name, Enabled: &off, Remaining: quota(7), Metadata: map[string]any{"k": "v"}})
	if err != nil || u.Name != "renamed" || u.Enabled || remaining(t, u) != 7 || u.Metadata["k"] != "v" || !u.UpdatedAt.Equal(epoch.Add(time.Second)) {
		t.Fatalf("Update = %+v, %v", u, err)
	}
	if u, err = e.m.Update(ctx, b.ID, UpdateParams{Unlimited: true}); err != nil || u.Remaining != nil {
		t.Fatalf("Update(Unlimited) = %+v, %v", u, err)
	}
	if _, err := e.m.Update(ctx, b.ID, UpdateParams{}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("empty Update: err = %v, want ErrInvalid", err)
	}
	if _, err := e.m.Update(ctx, b.ID, UpdateParams{Unlimited: true, Remaining: quota(1)}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("contradictory Update: err = %v, want ErrInvalid", err)
	}
	if _, err := e.m.Update(ctx, 999, UpdateParams{Name: &name}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Update(unknown) err = %v, want ErrNotFound", err)
	}

	// At exactly a's expiry it is expired; c is not yet.
	e.clock.Set(epoch.Add(time.Minute))
	if n, err := e.m.DeleteExpired(ctx); err != nil || n != 1 {
		t.Fatalf("DeleteExpired = %d, %v; want 1", n, err)
	}
	if _, err := e.m.Get(ctx, a.ID); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Get(expired, deleted) err = %v, want ErrNotFound", err)
	}
	if ok, err := e.m.Delete(ctx, c.ID); !ok || err != nil {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	if ok, err := e.m.Delete(ctx, c.ID); ok || err != nil {
		t.Fatalf("second Delete = %v, %v; want false, nil", ok, err)
	}
	if n, _ := e.db.Count(ctx, "apikey"); n != 1 {
		t.Fatalf("%d keys left, want 1", n)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	e := newEnv(t)
	for name, opts := range map[string][]Option{
		"nil clock":      {WithClock(nil)},
		"zero attempts":  {WithMaxAttempts(0)},
		"bad rate limit": {WithDefaultRateLimit(RateLimit{Enabled: true})},
		"cache ttl":      {WithCache(memory.NewStorage(), 0)},
	} {
		if _, err := New(e.db, opts...); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := New(nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("nil db: err = %v", err)
	}
}
