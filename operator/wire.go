package operator

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The JSON the API reads and writes. Names follow Better Auth's api-key
// endpoints: durations in milliseconds (expiresIn in seconds, as there),
// times as RFC 3339 text.

// APIKey is a key as the API shows it, in JSON: never its secret, never
// its hash. The sluice command prints keys in this form too.
type APIKey struct {
	ID                  int64                `json:"id"`
	ConfigID            string               `json:"configId"`
	Name                string               `json:"name"`
	Start               string               `json:"start" doc:"the first characters of the secret, to recognise it"`
	Prefix              string               `json:"prefix"`
	ReferenceID         string               `json:"referenceId" doc:"the owner"`
	Enabled             bool                 `json:"enabled"`
	RateLimitEnabled    bool                 `json:"rateLimitEnabled"`
	RateLimitTimeWindow *int64               `json:"rateLimitTimeWindow" doc:"milliseconds"`
	RateLimitMax        *int64               `json:"rateLimitMax"`
	RequestCount        int64                `json:"requestCount" doc:"requests in the current rate-limit window"`
	LastRequest         *time.Time           `json:"lastRequest" doc:"start of the current rate-limit window"`
	Remaining           *int64               `json:"remaining" doc:"quota left; null: unlimited"`
	RefillInterval      *int64               `json:"refillInterval" doc:"milliseconds"`
	RefillAmount        *int64               `json:"refillAmount"`
	LastRefillAt        *time.Time           `json:"lastRefillAt"`
	ExpiresAt           *time.Time           `json:"expiresAt"`
	CreatedAt           time.Time            `json:"createdAt"`
	UpdatedAt           time.Time            `json:"updatedAt"`
	Permissions         map[string][]string  `json:"permissions"`
	Metadata            map[string]any       `json:"metadata"`
	Limits              map[string]LimitInfo `json:"limits"`
}

// limit is a named limit as a request sets it.
type limit struct {
	Max        int64 `json:"max"`
	TimeWindow int64 `json:"timeWindow" doc:"milliseconds"`
}

// LimitInfo is a named limit with its counter, as [APIKey] shows it.
type LimitInfo struct {
	Max         int64      `json:"max"`
	TimeWindow  int64      `json:"timeWindow" doc:"milliseconds"`
	Count       int64      `json:"count"`
	WindowStart *time.Time `json:"windowStart"`
}

// FromKey is k as the API shows it.
func FromKey(k *apikey.Key) APIKey {
	a := APIKey{
		ID: k.ID, ConfigID: k.ConfigID, Name: k.Name, Start: k.Start, Prefix: k.Prefix,
		ReferenceID: k.ReferenceID, Enabled: k.Enabled, RateLimitEnabled: k.RateLimit.Enabled,
		RequestCount: k.RequestCount, LastRequest: timeOrNil(k.LastRequest),
		LastRefillAt: timeOrNil(k.LastRefillAt), ExpiresAt: timeOrNil(k.ExpiresAt),
		CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt,
		Permissions: k.Permissions, Metadata: k.Metadata, Limits: map[string]LimitInfo{},
	}
	if k.Permissions == nil {
		a.Permissions = map[string][]string{}
	}
	if k.Metadata == nil {
		a.Metadata = map[string]any{}
	}
	if k.Remaining != nil {
		a.Remaining = ptr(*k.Remaining)
	}
	if k.RateLimit.Enabled {
		a.RateLimitTimeWindow, a.RateLimitMax = ptr(k.RateLimit.Window.Milliseconds()), ptr(k.RateLimit.Max)
	}
	if k.Refill != (apikey.Refill{}) {
		a.RefillInterval, a.RefillAmount = ptr(k.Refill.Interval.Milliseconds()), ptr(k.Refill.Amount)
	}
	for name, l := range k.Limits {
		a.Limits[name] = LimitInfo{Max: l.Max, TimeWindow: l.Window.Milliseconds(), Count: l.Count, WindowStart: timeOrNil(l.WindowStart)}
	}
	return a
}

// CreatedKey is a new (or rerolled) key with its secret, shown this once.
type CreatedKey struct {
	Key string `json:"key" doc:"the secret: shown this once, never stored"`
	APIKey
}

type createRequest struct {
	ReferenceID         string              `json:"referenceId" doc:"required: the owner, such as a user id"`
	ConfigID            string              `json:"configId,omitempty"`
	Name                string              `json:"name,omitempty"`
	Prefix              string              `json:"prefix,omitempty"`
	ExpiresIn           *int64              `json:"expiresIn,omitempty" doc:"seconds; absent: never expires"`
	Remaining           *int64              `json:"remaining,omitempty" doc:"the quota; absent: unlimited"`
	RefillInterval      *int64              `json:"refillInterval,omitempty" doc:"milliseconds"`
	RefillAmount        *int64              `json:"refillAmount,omitempty"`
	RateLimitEnabled    *bool               `json:"rateLimitEnabled,omitempty" doc:"absent: the server's default rate limit"`
	RateLimitTimeWindow *int64              `json:"rateLimitTimeWindow,omitempty" doc:"milliseconds"`
	RateLimitMax        *int64              `json:"rateLimitMax,omitempty"`
	Enabled             *bool               `json:"enabled,omitempty" doc:"absent: true"`
	Permissions         map[string][]string `json:"permissions,omitempty"`
	Metadata            map[string]any      `json:"metadata,omitempty"`
	Limits              map[string]limit    `json:"limits,omitempty" doc:"named rate limits"`
}

type getQuery struct {
	ID int64 `query:"id" doc:"required: the key's id"`
}

type listQuery struct {
	ReferenceID    string `query:"referenceId" doc:"the owner's keys only"`
	Prefix         string `query:"prefix" doc:"keys with this prefix only"`
	Enabled        *bool  `query:"enabled" doc:"true or false"`
	ExpiringWithin *int64 `query:"expiringWithin" doc:"seconds: keys that expire before now plus this (expired ones included)"`
	Cursor         int64  `query:"cursor" doc:"nextCursor of the previous page"`
	Limit          int64  `query:"limit" doc:"keys per page, 1 to 1000; default 50"`
}

type listResponse struct {
	APIKeys    []APIKey `json:"apiKeys"`
	NextCursor *int64   `json:"nextCursor" doc:"the cursor of the next page; null: this was the last"`
}

type updateRequest struct {
	KeyID               int64               `json:"keyId" doc:"required"`
	Name                *string             `json:"name,omitempty"`
	Enabled             *bool               `json:"enabled,omitempty"`
	Remaining           nullable[int64]     `json:"remaining,omitzero" doc:"a new quota; null: unlimited (and no refill)"`
	RefillInterval      *int64              `json:"refillInterval,omitempty" doc:"milliseconds; 0 with refillAmount 0 removes the refill"`
	RefillAmount        *int64              `json:"refillAmount,omitempty"`
	RateLimitEnabled    *bool               `json:"rateLimitEnabled,omitempty"`
	RateLimitTimeWindow *int64              `json:"rateLimitTimeWindow,omitempty" doc:"milliseconds"`
	RateLimitMax        *int64              `json:"rateLimitMax,omitempty"`
	ExpiresIn           nullable[int64]     `json:"expiresIn,omitzero" doc:"seconds from now; null: never expires"`
	Permissions         map[string][]string `json:"permissions,omitempty" doc:"replaces them; {} removes them"`
	Metadata            map[string]any      `json:"metadata,omitempty" doc:"replaces it; {} removes it"`
	Limits              map[string]limit    `json:"limits,omitempty" doc:"replaces them; {} removes them"`
	ResetRateLimit      bool                `json:"resetRateLimit,omitempty" doc:"start the rate-limit window afresh"`
	RestartRefill       bool                `json:"restartRefill,omitempty" doc:"the next refill one interval from now"`
}

type keyIDRequest struct {
	KeyID int64 `json:"keyId" doc:"required"`
}

type rerollRequest struct {
	KeyID       int64 `json:"keyId" doc:"required"`
	GracePeriod int64 `json:"gracePeriod,omitempty" doc:"milliseconds the old secret keeps working; 0: it stops at once"`
}

type successResponse struct {
	Success bool `json:"success"`
}

type verifyRequest struct {
	Key         string              `json:"key" doc:"required: the secret"`
	Permissions map[string][]string `json:"permissions,omitempty" doc:"every one of them is required"`
}

type verifyError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type verifyResponse struct {
	Valid bool         `json:"valid"`
	Error *verifyError `json:"error"`
	Key   *APIKey      `json:"key"`
}

type eventsQuery struct {
	ID int64 `query:"id" doc:"required: the key's id"`
}

type keyEvent struct {
	Kind  string    `json:"kind" doc:"created, updated, rerolled or deleted"`
	Actor string    `json:"actor" doc:"who made the change, as the authorizer named them; empty when not through this API"`
	At    time.Time `json:"at"`
}

type eventsResponse struct {
	Events []keyEvent `json:"events" doc:"newest first"`
}

type limitQuery struct {
	Rule string `query:"rule" doc:"required: one of the rules the server names"`
	Key  string `query:"key" doc:"required: the rate-limit key, such as a client address"`
}

type limitState struct {
	Rule       string    `json:"rule"`
	Key        string    `json:"key"`
	Max        int64     `json:"max"`
	TimeWindow int64     `json:"timeWindow" doc:"milliseconds; 0 for a calendar rule"`
	Calendar   string    `json:"calendar,omitempty" doc:"a calendar rule's period and zone, as ratelimit.ParseRule reads them after the slash: day, week, month or year, then @ and the IANA zone unless UTC"`
	Remaining  int64     `json:"remaining"`
	Allowed    bool      `json:"allowed" doc:"whether a request would be admitted now"`
	Reset      time.Time `json:"reset" doc:"when the current window ends"`
}

type limitResetRequest struct {
	Rule string `json:"rule" doc:"required"`
	Key  string `json:"key" doc:"required"`
}

type rulesResponse struct {
	Rules []ruleInfo `json:"rules"`
}

type ruleInfo struct {
	Name       string `json:"name"`
	Max        int64  `json:"max"`
	TimeWindow int64  `json:"timeWindow" doc:"milliseconds; 0 for a calendar rule"`
	Calendar   string `json:"calendar,omitempty" doc:"a calendar rule's period and zone, as ratelimit.ParseRule reads them after the slash: day, week, month or year, then @ and the IANA zone unless UTC"`
}

// calendarOf is a calendar rule's period and zone as ratelimit.ParseRule
// reads them after the slash ("day@Europe/Berlin"); "" for another rule.
func calendarOf(r ratelimit.Rule) string {
	if r.Calendar == 0 {
		return ""
	}
	_, after, _ := strings.Cut(r.String(), "/")
	return after
}

type liveQuery struct {
	KeyID int64  `query:"keyId" doc:"one key's verifications; absent: all of them"`
	Rule  string `query:"rule" doc:"one rule's decisions instead"`
}

// liveSample is one server-sent event of GET /live.
type liveSample struct {
	At           time.Time `json:"at"`
	Allowed      float64   `json:"allowed" doc:"allowed per second since the last sample"`
	Denied       float64   `json:"denied" doc:"denied per second since the last sample"`
	TotalAllowed int64     `json:"totalAllowed" doc:"since the stream began"`
	TotalDenied  int64     `json:"totalDenied"`
}

// nullable is a field that can be absent, null, or a value.
type nullable[T any] struct {
	Set, Null bool
	V         T
}

// UnmarshalJSON records that the field was sent, and whether as null.
func (n *nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.V)
}

// MarshalJSON writes null or the value.
func (n nullable[T]) MarshalJSON() ([]byte, error) {
	if n.Null {
		return []byte("null"), nil
	}
	return json.Marshal(n.V)
}

// IsZero is true when the field was not sent, so omitzero leaves it out.
func (n nullable[T]) IsZero() bool { return !n.Set }

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func ptr[T any](v T) *T { return &v }
