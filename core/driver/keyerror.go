package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// KeyError is an error about one key (a rate-limit key, a concurrency key,
// an API key), which it names only redacted: the key may be a secret (an
// API key taken from a header) and may be as long as the caller likes, and
// error text reaches logs and traces. The limiters and the key manager
// wrap every failure about a key in one, made by [WrapKey], and so may a
// storage that names a key in its errors. Callers test for it with
// errors.As and a *driver.KeyError; it has one name, this one.
type KeyError struct {
	Op  string // what failed, such as "ratelimit" or "concurrency: Acquire"
	Key string // the key redacted, by [RedactKey]
	Err error  // the cause

	msg string
}

// Error is Op, the redacted key and the cause's text, in which the key
// itself (and its %q-quoted form) is replaced by the redacted one.
func (e *KeyError) Error() string { return e.msg }

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *KeyError) Unwrap() error { return e.Err }

// WrapKey wraps err, a failure about key, in a [KeyError]: the one way the
// packages of sluice put a key into an error.
func WrapKey(op, key string, err error) error {
	r := RedactKey(key)
	return &KeyError{Op: op, Key: r, Err: err, msg: op + ": key " + r + ": " + scrubKey(err.Error(), key, r)}
}

// redactShown is how many characters of a key its redacted form shows, at
// most, and never more than a quarter of the key.
const redactShown = 4

// RedactKey returns a bounded form of key that does not disclose it: its
// first characters (at most 4, and at most a quarter of them), its length
// in bytes, and the first 8 hex digits of its SHA-256, to tell keys apart
// and correlate one across events. For example, a 40-byte key starting
// "sk_live_" is "sk_l…" (40 bytes, sha256 1a2b3c4d).
func RedactKey(key string) string {
	i := 0
	for range min(redactShown, utf8.RuneCountInString(key)/4) {
		_, size := utf8.DecodeRuneInString(key[i:])
		i += size
	}
	head := key[:i]
	sum := sha256.Sum256([]byte(key))
	return fmt.Sprintf("%s… (%d bytes, sha256 %s)", strconv.Quote(head), len(key), hex.EncodeToString(sum[:4]))
}

// scrubProbe is the shortest start of a key that scrubKey looks for.
const scrubProbe = 8

// scrubKey replaces with r, in text, every run that starts like key (its
// first 8 bytes, or all of a shorter key) and as much of key as follows,
// as it is and %q-quoted: a cause may echo the key it failed on, whole or
// cut short (a store's message, a row named by the key's first
// characters and a digest).
func scrubKey(text, key, r string) string {
	forms := []string{key}
	if q := strconv.Quote(key); q[1:len(q)-1] != key {
		forms = append(forms, q[1:len(q)-1])
	}
	for _, k := range forms {
		if k == "" {
			continue
		}
		probe := k[:min(len(k), scrubProbe)]
		var b strings.Builder
		rest := text
		for {
			i := strings.Index(rest, probe)
			if i < 0 {
				break
			}
			n := len(probe)
			for n < len(k) && i+n < len(rest) && rest[i+n] == k[n] {
				n++
			}
			b.WriteString(rest[:i])
			b.WriteString(r)
			rest = rest[i+n:]
		}
		if b.Len() > 0 {
			b.WriteString(rest)
			text = b.String()
		}
	}
	return text
}
