package apikey

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// searchFixture makes five keys over two owners and returns their ids:
// a: sk_ enabled, expiring in 1h; b: sk_ disabled; c: pk_ enabled,
// expiring in 1d; d (owner v): sk_ enabled; e (owner v): pk_ disabled,
// expiring in 2h.
func searchFixture(t *testing.T, m *Manager) map[string]int64 {
	t.Helper()
	ids := map[string]int64{}
	for _, k := range []struct {
		name, owner, prefix string
		disabled            bool
		expires             time.Duration
	}{
		{"a", "u", "sk_", false, time.Hour},
		{"b", "u", "sk_", true, 0},
		{"c", "u", "pk_", false, 24 * time.Hour},
		{"d", "v", "sk_", false, 0},
		{"e", "v", "pk_", true, 2 * time.Hour},
	} {
		_, key, err := m.Create(context.Background(), CreateParams{ReferenceID: k.owner, Name: k.name, Prefix: k.prefix, Disabled: k.disabled, ExpiresIn: k.expires})
		if err != nil {
			t.Fatal(err)
		}
		ids[k.name] = key.ID
	}
	return ids
}

func TestSearchFilters(t *testing.T) {
	e := newEnv(t)
	ids := searchFixture(t, e.m)
	yes, no := true, false
	cases := []struct {
		name string
		f    Filter
		want []string
	}{
		{"all", Filter{}, []string{"a", "b", "c", "d", "e"}},
		{"owner", Filter{ReferenceID: "v"}, []string{"d", "e"}},
		{"prefix", Filter{Prefix: "pk_"}, []string{"c", "e"}},
		{"enabled", Filter{Enabled: &yes}, []string{"a", "c", "d"}},
		{"disabled", Filter{Enabled: &no}, []string{"b", "e"}},
		{"expiring within 3h", Filter{ExpiresBefore: e.clock.Now().Add(3 * time.Hour)}, []string{"a", "e"}},
		{"owner, prefix and enabled", Filter{ReferenceID: "u", Prefix: "sk_", Enabled: &yes}, []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keys, next, err := e.m.Search(context.Background(), c.f, 0, MaxPageSize)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range keys {
				if k.ID != ids[k.Name] {
					t.Errorf("key %q has id %d, created as %d", k.Name, k.ID, ids[k.Name])
				}
				got = append(got, k.Name)
			}
			if !slices.Equal(got, c.want) || next != 0 {
				t.Errorf("Search(%+v) = %v, next %d; want %v, next 0", c.f, got, next, c.want)
			}
		})
	}
}

func TestSearchPages(t *testing.T) {
	e := newEnv(t)
	searchFixture(t, e.m)
	var got []string
	after := int64(0)
	for pages := 1; ; pages++ {
		keys, next, err := e.m.Search(context.Background(), Filter{}, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			got = append(got, k.Name)
		}
		if next == 0 {
			if pages != 3 {
				t.Errorf("%d pages of 2 for 5 keys, want 3", pages)
			}
			break
		}
		after = next
	}
	if !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("paged through %v", got)
	}
	for _, bad := range []struct {
		after int64
		limit int
	}{{0, 0}, {0, MaxPageSize + 1}, {-1, 10}} {
		if _, _, err := e.m.Search(context.Background(), Filter{}, bad.after, bad.limit); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Search(after %d, limit %d): %v, want core.ErrInvalid", bad.after, bad.limit, err)
		}
	}
}

func TestSearchStorageOnly(t *testing.T) {
	clock := newClock()
	m, err := NewStorageOnly(memory.NewStorage(memory.WithClock(clock.Now)), WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	searchFixture(t, m)
	if _, _, err := m.Search(context.Background(), Filter{}, 0, 10); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("Search without an owner in storage-only mode: %v, want core.ErrUnsupported", err)
	}
	yes := true
	keys, _, err := m.Search(context.Background(), Filter{ReferenceID: "u", Enabled: &yes, ExpiresBefore: clock.Now().Add(2 * time.Hour)}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0].Name != "a" {
		t.Errorf("Search found %d keys, want only a", len(keys))
	}
}
