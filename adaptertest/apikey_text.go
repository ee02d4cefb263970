package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
)

const ruleStoredText = "an API key's text (owner, config id, name, metadata keys and values, permissions) at the edges of what is storable " +
	"(U+FFFD, U+10FFFF, line and paragraph separators, control characters, combining marks, what JSON escapes) reads back byte for byte; " +
	"invalid UTF-8 or NUL in metadata, which JSON would rewrite to U+FFFD, is core.ErrInvalid and writes nothing"

// apiKeyStoredText round-trips hostile text through the adapter's tables.
func apiKeyStoredText(ctx context.Context, f *Fixture) error {
	const text = "\uFFFD\U0010FFFF\u2028\u2029\x01\x7f\te\u0301<&>\"\\/"
	m, err := apikey.New(f.DB)
	if err != nil {
		return err
	}
	meta := map[string]any{text: text, "nested": map[string]any{text: []any{text, "plain"}}}
	perms := map[string][]string{text: {text, "read"}}
	_, k, err := m.Create(ctx, apikey.CreateParams{ReferenceID: text, ConfigID: text, Name: text, Metadata: meta, Permissions: perms})
	if err != nil {
		return fmt.Errorf("Create: %w", err)
	}
	got, err := m.Get(ctx, k.ID)
	if err != nil {
		return fmt.Errorf("Get: %w", err)
	}
	if got.ReferenceID != text || got.ConfigID != text || got.Name != text ||
		!reflect.DeepEqual(got.Metadata, meta) || !reflect.DeepEqual(got.Permissions, perms) {
		return fmt.Errorf("read back %q, %q, %q, %#v, %#v; want what was stored", got.ReferenceID, got.ConfigID, got.Name, got.Metadata, got.Permissions)
	}
	for _, bad := range []string{"\xff", "\x00"} {
		if _, _, err := m.Create(ctx, apikey.CreateParams{ReferenceID: text, Metadata: map[string]any{"a": bad}}); !errors.Is(err, core.ErrInvalid) {
			return fmt.Errorf("Create with metadata %q: %v; want core.ErrInvalid", bad, err)
		}
	}
	keys, err := m.List(ctx, text)
	if err != nil || len(keys) != 1 {
		return fmt.Errorf("List after the refusals: %d keys, %v; want the one stored", len(keys), err)
	}
	return nil
}
