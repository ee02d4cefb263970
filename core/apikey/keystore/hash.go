package keystore

import (
	"crypto/sha256"
	"encoding/base64"
)

// hashBuf holds any key that apikey's Create makes (a prefix of at most 32
// bytes and 64 letters) on the stack while it is hashed.
const hashBuf = 32 + 64

// Hash returns the stored form of a plaintext key, the [Key.Key] that
// storages find a key by: SHA-256, base64url without padding. It is Better
// Auth's default, so keys created by either verify with the other.
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
