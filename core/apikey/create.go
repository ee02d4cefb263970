package apikey

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

// CreateParams describes a new key. The zero value of every optional field
// means "none" or "the default". Every string in it, metadata keys and
// values included, must be valid UTF-8 without NUL, so that it reads back
// byte for byte from every store: anything else is core.ErrInvalid naming
// the field, before any write (UpdateParams and SetOwnerLimits alike).
type CreateParams struct {
	ReferenceID string // required: the owner, such as a user id
	ConfigID    string // default "default"
	Name        string
	// Prefix is prepended to the random part, as in "sk_live_"; up to
	// MaxPrefixLength letters, digits, '_' or '-'.
	Prefix    string
	ExpiresIn time.Duration // 0: never expires
	// Remaining is the quota; nil means unlimited.
	Remaining *int64
	// Refill restores the quota periodically; it needs a quota.
	Refill Refill
	// RateLimit is the per-key rate limit. nil means the manager's
	// default, which is Better Auth's unless [WithDefaultRateLimit] says
	// otherwise: 10 verifications per 24 hours, whatever the quota. Give
	// &RateLimit{} for none.
	RateLimit   *RateLimit
	Disabled    bool // create the key disabled
	Metadata    map[string]any
	Permissions map[string][]string // resource → actions
	// Limits are the key's named rate limits (such as "tokens"), which a
	// verification spends when it names them with [LimitCost]. In database
	// mode they need the apikeyLimit table ([core.APIKeyLimitModel]).
	Limits map[string]NamedLimit
}

// validate checks p and returns the stored key it describes, without the
// key material.
func (m *Manager) validate(p CreateParams, now time.Time) (*keystore.Key, error) {
	s := &keystore.Key{ConfigID: "default", Enabled: !p.Disabled, CreatedAt: now.UnixMilli(), UpdatedAt: now.UnixMilli()}
	switch {
	case p.ReferenceID == "":
		return nil, invalidf("ReferenceID is required")
	case len(p.ReferenceID) > 255:
		return nil, invalidf("ReferenceID is longer than 255 bytes")
	case len(p.ConfigID) > 255:
		return nil, invalidf("ConfigID is longer than 255 bytes")
	case utf8.RuneCountInString(p.Name) > MaxNameLength:
		return nil, invalidf("Name must be at most %d characters", MaxNameLength)
	case p.ExpiresIn < 0:
		return nil, invalidf("ExpiresIn %v is negative", p.ExpiresIn)
	case p.ExpiresIn > 0 && p.ExpiresIn < time.Millisecond:
		return nil, invalidf("ExpiresIn %v is shorter than a millisecond", p.ExpiresIn)
	case p.Remaining != nil && *p.Remaining < 0:
		return nil, invalidf("Remaining %d is negative", *p.Remaining)
	}
	for _, f := range [...]struct{ name, text string }{{"ReferenceID", p.ReferenceID}, {"ConfigID", p.ConfigID}, {"Name", p.Name}} {
		if err := checkText(f.name, f.text); err != nil {
			return nil, err
		}
	}
	if err := checkPrefix(p.Prefix); err != nil {
		return nil, err
	}
	s.ReferenceID = p.ReferenceID
	if p.ConfigID != "" {
		s.ConfigID = p.ConfigID
	}
	if p.Name != "" {
		s.Name = ptr(p.Name)
	}
	if p.Prefix != "" {
		s.Prefix = ptr(p.Prefix)
	}
	if p.ExpiresIn > 0 {
		s.ExpiresAt = ptr(now.Add(p.ExpiresIn).UnixMilli())
	}
	if p.Remaining != nil {
		s.Remaining = ptr(*p.Remaining)
	}
	if err := checkRefill(p.Refill); err != nil {
		return nil, err
	}
	if p.Refill != (Refill{}) {
		if p.Remaining == nil {
			return nil, invalidf("Refill needs a quota: set Remaining (a key without Remaining is unlimited)")
		}
		s.RefillInterval, s.RefillAmount, s.RefillAnchor = refillColumns(p.Refill)
	}
	rl := m.o.rateLimit
	if p.RateLimit != nil {
		rl = *p.RateLimit
	}
	if err := checkRateLimit(rl); err != nil {
		return nil, err
	}
	setRateLimit(s, rl)
	var err error
	if s.Metadata, err = encodeJSON("Metadata", p.Metadata); err != nil {
		return nil, err
	}
	if err := checkPermissions(p.Permissions); err != nil {
		return nil, err
	}
	if s.Permissions, err = encodeJSON("Permissions", p.Permissions); err != nil {
		return nil, err
	}
	if err := checkLimits(p.Limits); err != nil {
		return nil, err
	}
	s.Limits = configText(p.Limits)
	return s, nil
}

func setRateLimit(s *keystore.Key, rl RateLimit) {
	s.RateLimitEnabled = rl.Enabled
	s.RateLimitTimeWindow, s.RateLimitMax = nil, nil
	if rl.Enabled {
		s.RateLimitTimeWindow, s.RateLimitMax = ptr(rl.Window.Milliseconds()), ptr(rl.Max)
	}
}

// checkRefill validates r: both Interval and Amount, or Amount and a valid
// Anchor that can be stored, or none.
func checkRefill(r Refill) error {
	switch {
	case r == Refill{}:
		return nil
	case r.Anchor != nil && r.Interval != 0:
		return invalidf("Refill has both an Interval (%v) and an Anchor: give one", r.Interval)
	case r.Anchor != nil && r.Amount <= 0:
		return invalidf("Refill.Anchor needs a positive Amount (got %d)", r.Amount)
	case r.Anchor != nil:
		if _, err := r.Anchor.MarshalText(); err != nil {
			return invalidf("Refill.Anchor: %v", err)
		}
		return nil
	case r.Interval == 0 || r.Amount == 0:
		return invalidf("Refill needs both Interval and Amount, or neither (got interval %v, amount %d)", r.Interval, r.Amount)
	case r.Interval < time.Millisecond || r.Interval%time.Millisecond != 0:
		return invalidf("Refill.Interval %v must be a positive whole number of milliseconds", r.Interval)
	case r.Amount < 0:
		return invalidf("Refill.Amount %d is negative", r.Amount)
	}
	return nil
}

// refillColumns is a valid, non-zero r as the stored key's refillInterval,
// refillAmount and refillAnchor: an anchored refill leaves refillInterval
// NULL (see [Refill]).
func refillColumns(r Refill) (interval, amount *int64, anchor *string) {
	if r.Anchor == nil {
		return ptr(r.Interval.Milliseconds()), ptr(r.Amount), nil
	}
	text, _ := r.Anchor.MarshalText() // checked by checkRefill
	return nil, ptr(r.Amount), ptr(string(text))
}

func checkRateLimit(r RateLimit) error {
	switch {
	case !r.Enabled:
		return nil
	case r.Window < time.Millisecond || r.Window%time.Millisecond != 0:
		return invalidf("RateLimit.Window %v must be a positive whole number of milliseconds", r.Window)
	case r.Max < 0:
		return invalidf("RateLimit.Max %d is negative", r.Max)
	}
	return nil
}

func checkPermissions(p map[string][]string) error {
	for res, actions := range p {
		if err := checkPermissionName(res); err != nil {
			return invalidf("Permissions: resource %q %v", res, err)
		}
		for _, a := range actions {
			if err := checkPermissionName(a); err != nil {
				return invalidf("Permissions[%q]: action %q %v", res, a, err)
			}
		}
	}
	return nil
}

// checkPermissionName refuses an empty name and what checkText refuses.
func checkPermissionName(s string) error {
	if s == "" {
		return errors.New("is empty")
	}
	return driver.StorableText(s)
}

// encodeJSON returns nil for an empty map, so that the column stays NULL.
// Every string in v must pass checkText: json.Marshal would rewrite invalid
// UTF-8 to U+FFFD rather than fail.
func encodeJSON[M ~map[string]V, V any](what string, v M) (*string, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if err := checkJSONText(what, v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, invalidf("%s cannot be encoded as JSON: %v", what, err)
	}
	if !utf8.Valid(b) { // a json.Marshaler's own output
		return nil, invalidf("%s encodes as JSON that is not valid UTF-8", what)
	}
	return ptr(string(b)), nil
}

// Create makes a new key and returns its plaintext, which is not stored and
// cannot be recovered, and the key as stored. Invalid parameters fail with
// an error wrapping [core.ErrInvalid] before anything is written, and so
// does a table that fails [Manager.CheckSchema], with [core.ErrSchema].
func (m *Manager) Create(ctx context.Context, p CreateParams) (plaintext string, key *Key, err error) {
	start := time.Now()
	if err := m.initialised("Create"); err != nil {
		return "", nil, err
	}
	s, err := m.validate(p, m.now())
	if err != nil {
		return "", nil, err
	}
	random, err := randomLetters(KeyLength)
	if err != nil {
		return "", nil, err
	}
	if err := m.ready(ctx, "Create"); err != nil {
		return "", nil, err
	}
	plaintext = p.Prefix + random
	s.Key, s.Start = keystore.Hash(plaintext), ptr(plaintext[:StartLength])
	if err = m.store.create(ctx, s); err != nil {
		return "", nil, err
	}
	if key, err = toKey(s); err != nil {
		return plaintext, key, err
	}
	m.changed(ctx, start, Event{Kind: Created, Key: key})
	return plaintext, key, nil
}

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

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
	if err := checkText("Prefix", p); err != nil {
		return err
	}
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
