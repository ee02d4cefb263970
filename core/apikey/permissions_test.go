package apikey

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/internal/testclock"
)

var filesAndAdmin = map[string][]string{"files": {"read", "write"}, "admin": {"view"}}

// A verification that requires permissions is valid only when the key
// holds them (all of Permissions, one of AnyPermission), and a key that
// lacks them answers INSUFFICIENT_PERMISSIONS, 403, spending nothing.
func TestVerifyPermissions(t *testing.T) {
	eachMode(t, func(t *testing.T, m *Manager, _ *testclock.Clock) {
		ctx := context.Background()
		plain, k, err := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(100), RateLimit: noRateLimit(), Permissions: filesAndAdmin})
		if err != nil {
			t.Fatal(err)
		}
		bare, bk, err := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(100), RateLimit: noRateLimit()})
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			key  string
			opts []VerifyOption
			want Code
		}{
			{plain, nil, ""},
			{plain, []VerifyOption{Permissions(map[string][]string{"files": {"read"}})}, ""},
			{plain, []VerifyOption{Permissions(map[string][]string{"files": {"read", "write"}, "admin": {"view"}})}, ""},
			{plain, []VerifyOption{Permissions(map[string][]string{"files": {"delete"}})}, CodeForbidden},
			{plain, []VerifyOption{Permissions(map[string][]string{"billing": {"read"}})}, CodeForbidden},
			{plain, []VerifyOption{AnyPermission(map[string][]string{"billing": {"read"}, "admin": {"view"}})}, ""},
			{plain, []VerifyOption{AnyPermission(map[string][]string{"billing": {"read"}, "files": {"delete"}})}, CodeForbidden},
			{plain, []VerifyOption{Permissions(map[string][]string{"files": {"write"}}), AnyPermission(map[string][]string{"admin": {"view"}})}, ""},
			{plain, []VerifyOption{Permissions(map[string][]string{"files": {"write"}}), AnyPermission(map[string][]string{"admin": {"edit"}})}, CodeForbidden},
			{plain, []VerifyOption{Permissions(map[string][]string{"files": {"delete"}}), Cost(0)}, CodeForbidden},
			{bare, []VerifyOption{Permissions(map[string][]string{"files": {"read"}})}, CodeForbidden},
			{bare, []VerifyOption{AnyPermission(map[string][]string{"files": {"read"}})}, CodeForbidden},
			{bare, nil, ""},
		}
		spent := map[string]int64{}
		for i, c := range cases {
			r, err := m.Verify(ctx, c.key, c.opts...)
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			if r.Code != c.want || r.Valid != (c.want == "") {
				t.Fatalf("case %d: %+v, want code %q", i, r, c.want)
			}
			if c.want == CodeForbidden && (r.Status != http.StatusForbidden || r.Key == nil) {
				t.Fatalf("case %d: status %d, key %v; want 403 with the key as read", i, r.Status, r.Key)
			}
			if r.Valid {
				spent[c.key]++
			}
		}
		for key, id := range map[string]int64{plain: k.ID, bare: bk.ID} {
			got, err := m.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if *got.Remaining != 100-spent[key] {
				t.Errorf("key %d: remaining %d, want %d: only valid verifications spend", id, *got.Remaining, 100-spent[key])
			}
		}
		for _, bad := range []VerifyOption{Permissions(nil), Permissions(map[string][]string{"": {"read"}}), AnyPermission(map[string][]string{"files": {}}),
			AnyPermission(map[string][]string{"files": {""}}), Permissions(map[string][]string{"a\x00b": {"c"}}), AnyPermission(map[string][]string{"files": {"r\xff"}})} {
			if _, err := m.Verify(ctx, plain, bad); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("a bad permission option: %v, want ErrInvalid", err)
			}
		}
	})
}

// keystore.Permission names JSON would not keep byte for byte, or no store can hold,
// are refused before anything is written.
func TestCreatePermissionNames(t *testing.T) {
	eachMode(t, func(t *testing.T, m *Manager, _ *testclock.Clock) {
		ctx := context.Background()
		for _, p := range []map[string][]string{{"r\xff": {"read"}}, {"files": {"re\x00ad"}}, {"a\x00": {"b"}}, {"files": {""}}} {
			if _, _, err := m.Create(ctx, CreateParams{ReferenceID: "u", Permissions: p}); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("Create with permissions %q: %v, want ErrInvalid", p, err)
			}
		}
		_, k, err := m.Create(ctx, CreateParams{ReferenceID: "u"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Update(ctx, k.ID, UpdateParams{Permissions: map[string][]string{"files": {"w\xfe"}}}); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Update with invalid UTF-8: %v, want ErrInvalid", err)
		}
		if list, err := m.List(ctx, "u"); err != nil || len(list) != 1 {
			t.Fatalf("List: %d keys, %v; want only the valid one", len(list), err)
		}
	})
}

// A permission taken away by another manager (another process) is
// enforced at once: the write planned from the remembered key, which still
// held it, is guarded on the permissions as read and misses.
func TestVerifyPermissionRevokedElsewhere(t *testing.T) {
	e := newEnv(t)
	other, err := New(e.db, WithClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plain, k := e.create(t, CreateParams{Remaining: quota(10), RateLimit: noRateLimit(), Permissions: filesAndAdmin})
	need := Permissions(map[string][]string{"files": {"write"}})
	if r := e.verify(t, plain, need); !r.Valid {
		t.Fatalf("before: %+v", r)
	}
	if _, err := other.Update(ctx, k.ID, UpdateParams{Permissions: map[string][]string{"files": {"read"}}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.verify(t, plain, need), CodeForbidden)
	if got := e.get(t, k.ID); *got.Remaining != 9 {
		t.Fatalf("remaining %d, want 9: the denied verification spent", *got.Remaining)
	}
}

// Under concurrent verifications, a key without the permission spends
// nothing, and one with it admits exactly its quota.
func TestVerifyPermissionsRace(t *testing.T) {
	eachMode(t, func(t *testing.T, m *Manager, _ *testclock.Clock) {
		ctx := context.Background()
		with, wk, err := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(20), RateLimit: noRateLimit(), Permissions: filesAndAdmin})
		if err != nil {
			t.Fatal(err)
		}
		without, nk, err := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(20), RateLimit: noRateLimit(), Permissions: map[string][]string{"files": {"read"}}})
		if err != nil {
			t.Fatal(err)
		}
		need := Permissions(map[string][]string{"files": {"write"}})
		var mu sync.Mutex
		valid := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 100 {
			key := with
			if i%2 == 1 {
				key = without
			}
			wg.Go(func() {
				<-start
				r, err := m.Verify(ctx, key, need)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Valid {
					mu.Lock()
					valid[key]++
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if valid[with] != 20 || valid[without] != 0 {
			t.Fatalf("admitted %d with the permission, %d without; want 20 and 0", valid[with], valid[without])
		}
		for id, want := range map[int64]int64{wk.ID: 0, nk.ID: 20} {
			if got, err := m.Get(ctx, id); err != nil || *got.Remaining != want {
				t.Fatalf("key %d: %v, %v; want %d remaining", id, got, err, want)
			}
		}
	})
}
