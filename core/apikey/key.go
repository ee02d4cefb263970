package apikey

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// The sizes of a key, and the bounds of what Create, Update, Verify and
// ListPage accept: beyond them input is refused with [core.ErrInvalid].
// Then the denial codes of a [Result] (a successful verification has
// the empty [Code]).
const (
	// KeyLength is how many random letters follow the prefix in a new key.
	KeyLength = 64
	// StartLength is how many leading characters of a key are kept in the
	// clear, as Key.Start, to help owners recognise it.
	StartLength = 6
	// MaxPrefixLength bounds a key's prefix.
	MaxPrefixLength = 32
	// MaxNameLength bounds a key's name, in characters.
	MaxNameLength = 255
	// MaxLimits bounds how many named limits a key carries, and how many
	// one verification names.
	MaxLimits = 16
	// MaxLimitNameLength bounds a named limit's name, in bytes.
	MaxLimitNameLength = 64
	// MaxPageSize is the most keys one [Manager.ListPage] returns.
	MaxPageSize = 1000

	// The denial codes of a [Result], Better Auth's.
	CodeInvalid       = keystore.Invalid // unknown key (or deleted during verification)
	CodeDisabled      = keystore.Disabled
	CodeExpired       = keystore.Expired
	CodeUsageExceeded = keystore.UsageExceeded // quota exhausted
	CodeRateLimited   = keystore.RateLimited   // the key's rate limit or one of its named limits reached
	// CodeForbidden: the key lacks a permission the request requires (see
	// [Permissions] and [AnyPermission]).
	CodeForbidden = keystore.Forbidden
)

// Key is an API key as the caller sees it. The plaintext key is never part
// of it: only [Manager.Create] returns that, once.
type Key struct {
	ID          int64
	ConfigID    string
	Name        string
	Start       string // the first characters of the plaintext key, for display
	Prefix      string
	Hash        string // SHA-256 of the plaintext key, base64url without padding
	ReferenceID string // the owner, such as a user id
	Enabled     bool

	RateLimit    RateLimit
	RequestCount int64     // requests counted in the current rate-limit window
	LastRequest  time.Time // start of the current rate-limit window; zero: none yet

	Remaining    *int64 // quota left; nil for unlimited
	Refill       Refill
	LastRefillAt time.Time // zero: never refilled (the first refill is measured from CreatedAt)

	ExpiresAt time.Time // zero: never
	CreatedAt time.Time
	UpdatedAt time.Time

	Permissions map[string][]string
	Metadata    map[string]any
	// Limits are the key's named limits by name, with their counters:
	// all of them from Get, List and ListPage; from a verification, those
	// it named with LimitCost.
	Limits map[string]LimitUsage
}

// RateLimit is a per-key rate limit: at most Max requests (or units of
// cost) in a fixed window of Window that opens at the first request.
type RateLimit struct {
	Enabled bool
	Window  time.Duration // whole milliseconds
	Max     int64
}

// Refill restores a key's quota to Amount once Interval has elapsed since
// the last refill (or since creation), or, with Anchor instead of
// Interval, at each instant of the anchor, such as 09:00 in Berlin on the
// customer's signup day of every month ([keystore.Anchor]: the 31st
// refills on February's last day): once per instant, at the first
// verification after it. The zero Refill means none.
//
// An anchored refill needs database mode and its optional apikeyRefill
// table ([core.ModelAPIKeyRefill]); the apikey row keeps refillAmount
// with refillInterval NULL, so that Better Auth, sharing the table, never
// refills the key on its own. Changing a key's anchor applies the new
// anchor to the time of its last refill, as if the key had always had
// it; LastRefillAt then moves by one millisecond, which makes every
// verification planned under the old anchor miss its guarded write and
// read again.
type Refill struct {
	Interval time.Duration // whole milliseconds; 0 with an Anchor
	Amount   int64
	Anchor   *keystore.Anchor // nil: an interval refill
}

// toKey converts the stored form into a [Key]. Malformed permissions or
// metadata JSON is an error.
func toKey(s *keystore.Key) (*Key, error) {
	k := &Key{
		ID:           s.ID,
		ConfigID:     s.ConfigID,
		Name:         deref(s.Name),
		Start:        deref(s.Start),
		Prefix:       deref(s.Prefix),
		Hash:         s.Key,
		ReferenceID:  s.ReferenceID,
		Enabled:      s.Enabled,
		RequestCount: s.RequestCount,
		LastRequest:  msTime(s.LastRequest),
		LastRefillAt: msTime(s.LastRefillAt),
		ExpiresAt:    msTime(s.ExpiresAt),
		CreatedAt:    time.UnixMilli(s.CreatedAt).UTC(),
		UpdatedAt:    time.UnixMilli(s.UpdatedAt).UTC(),
	}
	if s.Remaining != nil {
		r := *s.Remaining
		k.Remaining = &r
	}
	k.RateLimit.Enabled = s.RateLimited()
	if s.RateLimitTimeWindow != nil {
		k.RateLimit.Window = time.Duration(*s.RateLimitTimeWindow) * time.Millisecond
	}
	if s.RateLimitMax != nil {
		k.RateLimit.Max = *s.RateLimitMax
	}
	if a, ok := s.Anchored(); ok {
		k.Refill = Refill{Amount: *s.RefillAmount, Anchor: &a}
	} else if s.Refillable() {
		k.Refill = Refill{Interval: time.Duration(*s.RefillInterval) * time.Millisecond, Amount: *s.RefillAmount}
	}
	if s.Permissions != nil && *s.Permissions != "" {
		if err := json.Unmarshal([]byte(*s.Permissions), &k.Permissions); err != nil {
			return nil, fmt.Errorf("apikey: key %d: permissions: %w", s.ID, err)
		}
	}
	if s.Metadata != nil && *s.Metadata != "" {
		if err := json.Unmarshal([]byte(*s.Metadata), &k.Metadata); err != nil {
			return nil, fmt.Errorf("apikey: key %d: metadata: %w", s.ID, err)
		}
	}
	k.Limits = usage(s)
	return k, nil
}

// usage is the key's named limits with their counters, as Key.Limits.
func usage(s *keystore.Key) map[string]LimitUsage {
	cfg := s.LimitConfigs()
	if len(cfg) == 0 {
		return nil
	}
	counts := s.LimitCounters()
	out := make(map[string]LimitUsage, len(cfg))
	for name, l := range cfg {
		u := LimitUsage{NamedLimit: NamedLimit{Max: l.Max, Window: time.Duration(l.Window) * time.Millisecond}}
		if c, ok := counts[name]; ok {
			u.Count = c.Count
			if c.Start != 0 {
				u.WindowStart = time.UnixMilli(c.Start).UTC()
			}
		}
		out[name] = u
	}
	return out
}

// toKeys converts a list of stored keys.
func toKeys(list []*keystore.Key) ([]*Key, error) {
	out := make([]*Key, 0, len(list))
	for _, s := range list {
		k, err := toKey(s)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// storedRow is a keystore.Key with room for what its pointers point to, so
// that converting a row allocates once rather than once per nullable field.
type storedRow struct {
	s      keystore.Key
	ints   [8]int64
	strs   [5]string
	ni, ns int // the ints and strs in use
}

// fromRow converts a row of the apikey model.
func fromRow(r core.Row) *keystore.Key {
	a := &storedRow{}
	a.s = keystore.Key{
		ID:                  r.Int("id"),
		Key:                 r.Text("key"),
		Enabled:             r.Bool("enabled"),
		RateLimitEnabled:    r.Bool("rateLimitEnabled"),
		RateLimitTimeWindow: a.nullInt(r, "rateLimitTimeWindow"),
		RateLimitMax:        a.nullInt(r, "rateLimitMax"),
		RefillInterval:      a.nullInt(r, "refillInterval"),
		RefillAmount:        a.nullInt(r, "refillAmount"),
		CreatedAt:           r.Time("createdAt").UnixMilli(),
	}
	a.written(r)
	return &a.s
}

// writeReturns are the fields that a verification's guarded write returns
// (core.IncrementRequest.Returning): those it writes, and those its guard
// (see consumeRequest) does not hold equal to the copy it was planned
// from. The others, fromWrite takes from that copy.
var writeReturns = []string{"requestCount", "lastRequest", "remaining", "lastRefillAt", "updatedAt",
	"expiresAt", "permissions", "metadata", "name", "start", "prefix", "referenceId", "configId"}

// fromWrite is the key after a verification's guarded write planned from
// s, r being the row it returned: the fields of writeReturns from r, the
// rest from s, which the guard held equal to the stored ones (the id and
// the hash, enabled, the rate-limit and refill settings) or which no
// write changes (createdAt).
func fromWrite(s *keystore.Key, r core.Row) *keystore.Key {
	a := &storedRow{}
	a.s = keystore.Key{
		ID:                  s.ID,
		Key:                 s.Key,
		Enabled:             s.Enabled,
		RateLimitEnabled:    s.RateLimitEnabled,
		RateLimitTimeWindow: a.int(s.RateLimitTimeWindow),
		RateLimitMax:        a.int(s.RateLimitMax),
		RefillInterval:      a.int(s.RefillInterval),
		RefillAmount:        a.int(s.RefillAmount),
		CreatedAt:           s.CreatedAt,
	}
	a.written(r)
	return &a.s
}

// written converts the fields of writeReturns from r.
func (a *storedRow) written(r core.Row) {
	a.s.ConfigID = r.Text("configId")
	a.s.Name = a.nullText(r, "name")
	a.s.Start = a.nullText(r, "start")
	a.s.Prefix = a.nullText(r, "prefix")
	a.s.ReferenceID = r.Text("referenceId")
	a.s.RequestCount = r.Int("requestCount")
	a.s.Remaining = a.nullInt(r, "remaining")
	a.s.LastRefillAt = a.nullMs(r, "lastRefillAt")
	a.s.LastRequest = a.nullMs(r, "lastRequest")
	a.s.ExpiresAt = a.nullMs(r, "expiresAt")
	a.s.UpdatedAt = r.Time("updatedAt").UnixMilli()
	a.s.Permissions = a.nullText(r, "permissions")
	a.s.Metadata = a.nullText(r, "metadata")
}

// int points to a copy of *p in a, or is nil.
func (a *storedRow) int(p *int64) *int64 {
	if p == nil {
		return nil
	}
	q := &a.ints[a.ni]
	*q, a.ni = *p, a.ni+1
	return q
}

func (a *storedRow) nullInt(r core.Row, f string) *int64 {
	n, ok := r.NullInt(f)
	if !ok {
		return nil
	}
	return a.int(&n)
}

func (a *storedRow) nullMs(r core.Row, f string) *int64 {
	t, ok := r.NullTime(f)
	if !ok {
		return nil
	}
	ms := t.UnixMilli()
	return a.int(&ms)
}

func (a *storedRow) nullText(r core.Row, f string) *string {
	v, ok := r.NullText(f)
	if !ok {
		return nil
	}
	p := &a.strs[a.ns]
	*p, a.ns = v, a.ns+1
	return p
}

// values returns the stored key as the field values of a Create, without id.
func values(s *keystore.Key) map[string]any {
	return map[string]any{
		"configId":            s.ConfigID,
		"name":                s.Name,
		"start":               s.Start,
		"prefix":              s.Prefix,
		"key":                 s.Key,
		"referenceId":         s.ReferenceID,
		"enabled":             s.Enabled,
		"rateLimitEnabled":    s.RateLimitEnabled,
		"rateLimitTimeWindow": s.RateLimitTimeWindow,
		"rateLimitMax":        s.RateLimitMax,
		"requestCount":        s.RequestCount,
		"remaining":           s.Remaining,
		"refillInterval":      s.RefillInterval,
		"refillAmount":        s.RefillAmount,
		"lastRefillAt":        timePtr(s.LastRefillAt),
		"lastRequest":         timePtr(s.LastRequest),
		"expiresAt":           timePtr(s.ExpiresAt),
		"createdAt":           time.UnixMilli(s.CreatedAt).UTC(),
		"updatedAt":           time.UnixMilli(s.UpdatedAt).UTC(),
		"permissions":         s.Permissions,
		"metadata":            s.Metadata,
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func msTime(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return time.UnixMilli(*ms).UTC()
}

// timePtr returns nil for NULL so that core stores NULL.
func timePtr(ms *int64) any {
	if ms == nil {
		return nil
	}
	return time.UnixMilli(*ms).UTC()
}

func ptr[T any](v T) *T { return &v }
