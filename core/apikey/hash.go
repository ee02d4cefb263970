package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// hashBuf holds any key that Create makes (a prefix and KeyLength letters)
// on the stack while it is hashed.
const hashBuf = MaxPrefixLength + KeyLength

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// Hash returns the stored form of a plaintext key: SHA-256, base64url
// without padding. It is Better Auth's default, so keys created by either
// verify with the other.
func Hash(key string) string {
	var sum [sha256.Size]byte
	if len(key) <= hashBuf {
		// Copied to the stack: converting a key longer than 32 bytes
		// would allocate.
		var buf [hashBuf]byte
		sum = sha256.Sum256(append(buf[:0], key...))
	} else {
		sum = sha256.Sum256([]byte(key))
	}
	var out [43]byte // base64 of 32 bytes, unpadded: encoded here, one allocation for the string
	base64.RawURLEncoding.Encode(out[:], sum[:])
	return string(out[:])
}

// randomLetters returns n letters drawn uniformly from crypto/rand.
func randomLetters(n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("apikey: reading random bytes: %w", err)
		}
		for _, b := range buf {
			// 208 = 4 × 52: rejecting larger bytes keeps every letter
			// equally likely.
			if b < 208 && len(out) < n {
				out = append(out, letters[int(b)%len(letters)])
			}
		}
	}
	return string(out), nil
}

// checkPrefix accepts 1 to MaxPrefixLength letters, digits, '_' or '-'
// (or the empty prefix): characters that survive headers, URLs and logs.
func checkPrefix(p string) error {
	if len(p) > MaxPrefixLength {
		return invalidf("prefix %q is longer than %d characters", p, MaxPrefixLength)
	}
	for i, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return invalidf("prefix %q has %q at byte %d: only letters, digits, '_' and '-' are allowed", p, r, i)
		}
	}
	return nil
}
