package apikey

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// TestLongestKeyHashedOnTheStack: keystore.Hash copies a key of up to
// MaxPrefixLength + KeyLength bytes to the stack, so hashing any key Create
// makes allocates only the answer.
func TestLongestKeyHashedOnTheStack(t *testing.T) {
	key := strings.Repeat("p", MaxPrefixLength) + strings.Repeat("k", KeyLength)
	if n := testing.AllocsPerRun(100, func() { _ = keystore.Hash(key) }); n != 1 {
		t.Errorf("keystore.Hash of a %d-byte key: %v allocations, want 1 (the string)", len(key), n)
	}
}

func TestCreateKeyMaterial(t *testing.T) {
	e := newEnv(t)
	plain, k := e.create(t, CreateParams{Prefix: "sk_live_"})
	if !strings.HasPrefix(plain, "sk_live_") || len(plain) != len("sk_live_")+KeyLength {
		t.Fatalf("key %q: want prefix sk_live_ and %d random letters", plain, KeyLength)
	}
	for _, r := range plain[len("sk_live_"):] {
		if !strings.ContainsRune(letters, r) {
			t.Fatalf("key %q has non-letter %q in its random part", plain, r)
		}
	}
	if k.Hash != keystore.Hash(plain) || k.Start != plain[:StartLength] || k.Prefix != "sk_live_" {
		t.Fatalf("key = {Hash:%q Start:%q Prefix:%q}, want hash of the key, its first %d characters and the prefix", k.Hash, k.Start, k.Prefix, StartLength)
	}
	rows, err := e.db.FindMany(context.Background(), "apikey", nil, nil)
	if err != nil || len(rows) != 1 {
		t.Fatalf("FindMany: %d rows, %v", len(rows), err)
	}
	for f, v := range rows[0] {
		if s, ok := v.(string); ok && strings.Contains(s, plain[len("sk_live_"):]) {
			t.Fatalf("field %q stores the plaintext key", f)
		}
	}
	other, _ := e.create(t, CreateParams{})
	if other == plain || len(other) != KeyLength {
		t.Fatalf("second key %q: want a different key of %d letters", other, KeyLength)
	}
}

func TestRandomLettersUniformAlphabet(t *testing.T) {
	s, err := randomLetters(52 * 200)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[rune]int{}
	for _, r := range s {
		seen[r]++
	}
	// Every letter appears; none is wildly over-represented (expected 200).
	if len(seen) != len(letters) {
		t.Fatalf("%d distinct letters, want %d", len(seen), len(letters))
	}
	for r, n := range seen {
		if n > 400 {
			t.Errorf("letter %q drawn %d times of %d, expected about 200", r, n, len(s))
		}
	}
}
