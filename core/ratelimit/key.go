package ratelimit

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"unicode"
	"unicode/utf8"
)

// checkKey refuses, before any I/O, a key that some storage cannot hold:
// PostgreSQL refuses invalid UTF-8 and NUL in text, MariaDB refuses invalid
// UTF-8 under utf8mb4. The same rule holds for every storage, so a key
// that works in memory works in the database too.
func checkKey(key string) error {
	if key != "" && plainASCII(key) {
		return nil
	}
	switch {
	case key == "":
		return invalidf("empty key")
	case !utf8.ValidString(key):
		return invalidf("the key is not valid UTF-8, which a database cannot store: build keys from untrusted input with SafeKey")
	case strings.IndexByte(key, 0) >= 0:
		return invalidf("the key contains a NUL byte, which a database cannot store: build keys from untrusted input with SafeKey")
	}
	return nil
}

// plainASCII reports whether key is ASCII without NUL, the common case,
// eight bytes at a time: one pass in place of the two (a UTF-8 check, then
// a search for NUL) that checkKey makes otherwise, the larger part of a
// Memory decision's validation.
func plainASCII(key string) bool {
	const lows, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(key); i += 8 {
		x := uint64(key[i]) | uint64(key[i+1])<<8 | uint64(key[i+2])<<16 | uint64(key[i+3])<<24 |
			uint64(key[i+4])<<32 | uint64(key[i+5])<<40 | uint64(key[i+6])<<48 | uint64(key[i+7])<<56
		// a byte ≥ 0x80, or a zero byte: (x − 0x01…) & ^x has the high bit of the lowest zero byte set
		if x&highs != 0 || (x-lows)&^x&highs != 0 {
			return false
		}
	}
	for ; i < len(key); i++ {
		if c := key[i]; c == 0 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// How a limiter names what it stores.
const (
	// MaxKeyLength is the longest key [SafeKey] returns, in bytes: the
	// default key column holds 255 characters, and a character is at
	// least a byte.
	MaxKeyLength = 255
	// SecondaryPrefix is put before every key a limiter stores in a
	// secondary storage.
	SecondaryPrefix = "ratelimit:"
	// SlidingSeparator joins a key and a window number in the names of the
	// counters [SlidingWindow] keeps in database and secondary storage: the
	// counter of window i (the window starting at i×Window epoch milliseconds)
	// of key k is named k + "#" + i in decimal, so a key has one counter per
	// window. No key [SafeKey] returns ends with "#" and digits only, so these
	// names never meet a fixed-window key made by SafeKey. A key too long for
	// the key column with the suffix is stored by its digest instead (see
	// [Limiter.ConsumeN]).
	SlidingSeparator = "#"
)

// SafeKey turns any string, such as one built from a request's path or
// headers, into a key every storage can hold, without letting two distinct
// strings share a key (up to SHA-256 collisions).
//
// Valid UTF-8 other than control characters, '%' and '#' is kept as it is;
// those, and every byte of invalid UTF-8, are written as %XX, so the
// result is valid UTF-8 without NUL and decodes back to s. A result longer
// than [MaxKeyLength] bytes keeps its first bytes and ends with '#' and the
// SHA-256 of the whole in unpadded base64url: no short result holds a '#'.
func SafeKey(s string) string {
	if plain(s) && len(s) <= MaxKeyLength {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || r == '%' || r == '#' || unicode.IsControl(r) {
			for _, c := range []byte(s[i : i+n]) {
				const hex = "0123456789ABCDEF"
				b.WriteByte('%')
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xF])
			}
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	k := b.String()
	if len(k) <= MaxKeyLength {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	tail := "#" + base64.RawURLEncoding.EncodeToString(sum[:])
	head := k[:MaxKeyLength-len(tail)]
	for !utf8.ValidString(head) { // do not cut a character in two
		head = head[:len(head)-1]
	}
	return head + tail
}

// plain reports whether SafeKey keeps every character of s: the common
// case, checked without allocating.
func plain(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r == '%' || r == '#' || unicode.IsControl(r) {
			return false
		}
	}
	return true
}
