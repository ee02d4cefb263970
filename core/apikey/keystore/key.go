package keystore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
)

// Key is an API key as it is stored: the fields of the apikey model
// (SPEC section 6) under their logical names, with every time as epoch
// milliseconds and every duration in milliseconds, and nil for NULL. Its
// JSON encoding is the value that apikey's cached and storage-only modes
// keep in a storage, and the record that a [Claimer] works on.
type Key struct {
	ID                  int64   `json:"id"`
	ConfigID            string  `json:"configId"`
	Name                *string `json:"name"`
	Start               *string `json:"start"`
	Prefix              *string `json:"prefix"`
	Key                 string  `json:"key"` // the hash
	ReferenceID         string  `json:"referenceId"`
	Enabled             bool    `json:"enabled"`
	RateLimitEnabled    bool    `json:"rateLimitEnabled"`
	RateLimitTimeWindow *int64  `json:"rateLimitTimeWindow"` // ms
	RateLimitMax        *int64  `json:"rateLimitMax"`
	RequestCount        int64   `json:"requestCount"`
	Remaining           *int64  `json:"remaining"`
	RefillInterval      *int64  `json:"refillInterval"` // ms
	RefillAmount        *int64  `json:"refillAmount"`
	LastRefillAt        *int64  `json:"lastRefillAt"` // epoch ms
	// RefillAnchor, with RefillInterval nil, makes the refill anchored to
	// the calendar: the text of an [Anchor] (see [Anchor.MarshalText]).
	// The database keeps it in the apikeyRefill table, so that Better
	// Auth, which reads refillInterval and refillAmount, sees a key
	// without refill and never refills it a second time.
	RefillAnchor *string `json:"refillAnchor,omitempty"`
	LastRequest  *int64  `json:"lastRequest"` // epoch ms
	ExpiresAt    *int64  `json:"expiresAt"`   // epoch ms
	CreatedAt    int64   `json:"createdAt"`   // epoch ms
	UpdatedAt    int64   `json:"updatedAt"`   // epoch ms
	Permissions  *string `json:"permissions"` // JSON text of resource → actions
	Metadata     *string `json:"metadata"`    // JSON text
	// Rerolled, in storage-only mode, holds the earlier hashes of a
	// rerolled key that still open it: JSON text of hash → end of its
	// grace in epoch ms. The database keeps them in the rerolledKey table
	// instead.
	Rerolled *string `json:"rerolled,omitempty"`
	// Limits and LimitCounts hold the key's named limits and their
	// counters (see rule 5b of [Apply]), in storage-only mode; the
	// database keeps them in the apikeyLimit table instead. A claim writes
	// only the counters and an update only the limits, so neither undoes
	// the other.
	Limits      *string `json:"limits,omitempty"`
	LimitCounts *string `json:"limitCounts,omitempty"`
}

// RateLimited reports whether the key's rate limit applies: enabled, with a
// positive window and a max (a NULL max, as Better Auth never writes, turns
// it off rather than denying everything).
func (k *Key) RateLimited() bool {
	return k.RateLimitEnabled && k.RateLimitTimeWindow != nil && *k.RateLimitTimeWindow > 0 && k.RateLimitMax != nil
}

// Refillable reports whether the key has a refill: both a positive interval
// and a positive amount, as in Better Auth, or an anchored one
// ([Key.Anchored]).
func (k *Key) Refillable() bool {
	if k.RefillInterval != nil && *k.RefillInterval > 0 && k.RefillAmount != nil && *k.RefillAmount > 0 {
		return true
	}
	_, ok := k.Anchored()
	return ok
}

// Anchored returns the anchor of a key with an anchored refill: a
// positive RefillAmount, no RefillInterval (an interval refill, the one
// Better Auth applies, wins) and a RefillAnchor that reads back. A key
// whose RefillAnchor is malformed has no refill.
func (k *Key) Anchored() (Anchor, bool) {
	if k.RefillAnchor == nil || k.RefillInterval != nil || k.RefillAmount == nil || *k.RefillAmount <= 0 {
		return Anchor{}, false
	}
	var a Anchor
	if a.UnmarshalText([]byte(*k.RefillAnchor)) != nil {
		return Anchor{}, false
	}
	return a, true
}

// OpensWith reports whether the key presented with the given hash opens k
// at now, epoch ms (rule 0 of [Apply]): "" and k's own hash always do, an
// earlier hash while its grace lasts.
func (k *Key) OpensWith(hash string, now int64) bool {
	if hash == "" || hash == k.Key {
		return true
	}
	end, ok := k.RerolledUntil()[hash]
	return ok && end > now
}

// RerolledUntil decodes k.Rerolled: each earlier hash and the end of its
// grace, epoch ms. Malformed text holds nothing.
func (k *Key) RerolledUntil() map[string]int64 { return decodeMap[int64](k.Rerolled) }

// LimitConfig is a named limit as [Key.Limits] holds it, and LimitCount its
// counter as [Key.LimitCounts] does. Fields are in name order, as a Lua
// script writes them back.
type LimitConfig struct {
	Max    int64 `json:"max"`
	Window int64 `json:"window"` // ms
}

// LimitCount is a named limit's counter; see [LimitConfig].
type LimitCount struct {
	Count int64 `json:"count"`
	Start int64 `json:"start"` // epoch ms, 0 for none
}

// LimitConfigs decodes k.Limits; nil or malformed text holds none.
func (k *Key) LimitConfigs() map[string]LimitConfig { return decodeMap[LimitConfig](k.Limits) }

// LimitCounters decodes k.LimitCounts; nil or malformed text holds none.
func (k *Key) LimitCounters() map[string]LimitCount { return decodeMap[LimitCount](k.LimitCounts) }

// SetLimitConfigs encodes m into k.Limits, nil when m is empty.
func (k *Key) SetLimitConfigs(m map[string]LimitConfig) { k.Limits = encodeMap(m) }

// SetLimitCounters encodes m into k.LimitCounts, nil when m is empty.
func (k *Key) SetLimitCounters(m map[string]LimitCount) { k.LimitCounts = encodeMap(m) }

// decodeMap decodes JSON text into a map; nil or malformed text holds
// nothing.
func decodeMap[V any](text *string) map[string]V {
	if text == nil || *text == "" {
		return nil // before m, whose address escapes: no allocation for no text
	}
	var m map[string]V
	if json.Unmarshal([]byte(*text), &m) != nil {
		return nil
	}
	return m
}

// encodeMap is the JSON text of m, nil when it is empty.
func encodeMap[V any](m map[string]V) *string {
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m) // of int64 fields: cannot fail
	s := string(b)
	return &s
}

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
