package apikey

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/internal/testclock"
)

// unstorable are the two kinds of string no field takes: invalid UTF-8,
// which encoding/json would rewrite to U+FFFD, and NUL.
var unstorable = map[string]string{"invalid UTF-8": "ok\xffok", "NUL": "ok\x00ok"}

// TestStoredTextRefusedBeforeWrite: invalid UTF-8 and NUL in any field a
// caller sets, on Create, Update and SetOwnerLimits, are core.ErrInvalid
// naming the field, and nothing is written.
func TestStoredTextRefusedBeforeWrite(t *testing.T) {
	eachMode(t, func(t *testing.T, m *Manager, _ *testclock.Clock) {
		ctx := context.Background()
		_, k, err := m.Create(ctx, CreateParams{ReferenceID: "owner", Name: "kept", Metadata: map[string]any{"a": "kept"}})
		if err != nil {
			t.Fatal(err)
		}
		for kind, bad := range unstorable {
			for field, p := range map[string]CreateParams{
				"ReferenceID":        {ReferenceID: bad},
				"ConfigID":           {ConfigID: bad},
				"Name":               {Name: bad},
				"Prefix":             {Prefix: bad},
				"Metadata key":       {Metadata: map[string]any{bad: 1}},
				`Metadata["a"]`:      {Metadata: map[string]any{"a": bad}},
				`Metadata["a"][1]`:   {Metadata: map[string]any{"a": []any{"x", bad}}},
				`["b"]["c"]`:         {Metadata: map[string]any{"b": map[string]any{"c": bad}}},
				"resource":           {Permissions: map[string][]string{bad: {"read"}}},
				"action":             {Permissions: map[string][]string{"files": {bad}}},
				"limit name":         {Limits: map[string]NamedLimit{bad: {Max: 1, Window: time.Second}}},
				`Metadata["s"].Note`: {Metadata: map[string]any{"s": struct{ Note string }{bad}}},
				`Metadata["p"] key`:  {Metadata: map[string]any{"p": map[string]int{bad: 1}}},
			} {
				if p.ReferenceID == "" {
					p.ReferenceID = "owner"
				}
				_, _, err := m.Create(ctx, p)
				if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), field) {
					t.Errorf("Create with %s in %s: %v; want core.ErrInvalid naming %s", kind, field, err, field)
				}
			}
			bad := bad
			for field, u := range map[string]UpdateParams{
				"Name":          {Name: &bad},
				`Metadata["a"]`: {Metadata: map[string]any{"a": bad}},
				"action":        {Permissions: map[string][]string{"files": {bad}}},
				"limit name":    {Limits: map[string]NamedLimit{bad: {Max: 1, Window: time.Second}}},
			} {
				if _, err := m.Update(ctx, k.ID, u); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), field) {
					t.Errorf("Update with %s in %s: %v; want core.ErrInvalid naming %s", kind, field, err, field)
				}
			}
			if err := m.SetOwnerLimits(ctx, bad, map[string]NamedLimit{"tokens": {Max: 1, Window: time.Second}}); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "ReferenceID") {
				t.Errorf("SetOwnerLimits with %s in the owner: %v; want core.ErrInvalid naming the owner", kind, err)
			}
		}
		keys, err := m.List(ctx, "owner")
		if err != nil || len(keys) != 1 {
			t.Fatalf("List after the refusals: %d keys, %v; want the one made first", len(keys), err)
		}
		if got := keys[0]; got.Name != "kept" || !reflect.DeepEqual(got.Metadata, map[string]any{"a": "kept"}) {
			t.Errorf("the key after refused updates: name %q, metadata %#v; want them unchanged", got.Name, got.Metadata)
		}
	})
}

// TestStoredTextRoundTrips: text at the edges of what is storable (U+FFFD
// itself, the largest code point, line and paragraph separators, control
// characters, combining marks, what JSON escapes) comes back from Create,
// Update and Get byte for byte.
func TestStoredTextRoundTrips(t *testing.T) {
	const hostile = "\uFFFD\U0010FFFF\u2028\u2029\x01\x7f\te\u0301<&>\"\\/"
	eachMode(t, func(t *testing.T, m *Manager, _ *testclock.Clock) {
		ctx := context.Background()
		meta := map[string]any{hostile: hostile, "nested": map[string]any{hostile: []any{hostile, "plain"}}}
		perms := map[string][]string{hostile: {hostile, "read"}}
		_, k, err := m.Create(ctx, CreateParams{ReferenceID: hostile, ConfigID: hostile, Name: hostile, Metadata: meta, Permissions: perms})
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Get(ctx, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ReferenceID != hostile || got.ConfigID != hostile || got.Name != hostile ||
			!reflect.DeepEqual(got.Metadata, meta) || !reflect.DeepEqual(got.Permissions, perms) {
			t.Errorf("read back %q %q %v %#v %#v; want what was stored", got.ReferenceID, got.ConfigID, got.Name, got.Metadata, got.Permissions)
		}
		name, meta2 := hostile+"2", map[string]any{"k": hostile + "2"}
		if _, err := m.Update(ctx, k.ID, UpdateParams{Name: &name, Metadata: meta2}); err != nil {
			t.Fatal(err)
		}
		if got, err = m.Get(ctx, k.ID); err != nil || got.Name != name || !reflect.DeepEqual(got.Metadata, meta2) {
			t.Errorf("after Update: %v, name %q, metadata %#v; want %q, %#v", err, got.Name, got.Metadata, name, meta2)
		}
	})
}
