package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The names the manager's validation errors use, by route, and the JSON
// fields they stand for (see fieldNames).
var (
	keyFields = fieldNames{
		{"Refill.Interval", "refillInterval"}, {"Refill.Amount", "refillAmount"},
		{"Refill needs both", "refillInterval"}, {"Refill needs a quota", "remaining"},
		{"RateLimit.Window", "rateLimitTimeWindow"}, {"RateLimit.Max", "rateLimitMax"},
		{"ReferenceID", "referenceId"}, {"ConfigID", "configId"}, {"Name", "name"}, {"prefix", "prefix"},
		{"ExpiresIn", "expiresIn"}, {"Remaining", "remaining"}, {"Unlimited", "remaining"},
		{"Metadata", "metadata"}, {"Permissions", "permissions"}, {"Limits", "limits"}, {"limit name", "limits"},
	}
	fieldsOf = map[string]fieldNames{
		"/api-key/create": keyFields,
		"/api-key/update": keyFields,
		"/api-key/reroll": {{"grace", "gracePeriod"}},
		"/api-key/verify": {{"Permissions", "permissions"}},
	}
)

// millis turns a field's milliseconds into a duration, refusing what
// would overflow one.
func millis(field string, ms int64) (time.Duration, error) {
	if ms > math.MaxInt64/int64(time.Millisecond) || ms < math.MinInt64/int64(time.Millisecond) {
		return 0, fieldError(field, "%d milliseconds is too long", ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func seconds(field string, s int64) (time.Duration, error) {
	if s > math.MaxInt64/int64(time.Second) || s < math.MinInt64/int64(time.Second) {
		return 0, fieldError(field, "%d seconds is too long", s)
	}
	return time.Duration(s) * time.Second, nil
}

func namedLimits(in map[string]limit) (map[string]apikey.NamedLimit, error) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]apikey.NamedLimit, len(in))
	for name, l := range in {
		w, err := millis("limits", l.TimeWindow)
		if err != nil {
			return nil, err
		}
		out[name] = apikey.NamedLimit{Max: l.Max, Window: w}
	}
	return out, nil
}

func (h *Handler) create(ctx context.Context, in createRequest) (CreatedKey, error) {
	p := apikey.CreateParams{
		ReferenceID: in.ReferenceID, ConfigID: in.ConfigID, Name: in.Name, Prefix: in.Prefix,
		Remaining: in.Remaining, Disabled: in.Enabled != nil && !*in.Enabled,
		Metadata: in.Metadata, Permissions: in.Permissions,
	}
	var err error
	if in.ExpiresIn != nil {
		if p.ExpiresIn, err = seconds("expiresIn", *in.ExpiresIn); err != nil {
			return CreatedKey{}, err
		}
		if *in.ExpiresIn == 0 {
			return CreatedKey{}, fieldError("expiresIn", "must be at least 1 second; leave it out for a key that never expires")
		}
	}
	if in.RefillInterval != nil || in.RefillAmount != nil {
		if p.Refill.Interval, err = millis("refillInterval", deref(in.RefillInterval)); err != nil {
			return CreatedKey{}, err
		}
		p.Refill.Amount = deref(in.RefillAmount)
	}
	if in.RateLimitEnabled != nil || in.RateLimitTimeWindow != nil || in.RateLimitMax != nil {
		rl := apikey.RateLimit{Enabled: in.RateLimitEnabled == nil || *in.RateLimitEnabled}
		if rl.Enabled {
			if rl.Window, err = millis("rateLimitTimeWindow", deref(in.RateLimitTimeWindow)); err != nil {
				return CreatedKey{}, err
			}
			rl.Max = deref(in.RateLimitMax)
		}
		p.RateLimit = &rl
	}
	if p.Limits, err = namedLimits(in.Limits); err != nil {
		return CreatedKey{}, err
	}
	secret, k, err := h.cfg.Keys.Create(ctx, p)
	if err != nil {
		return CreatedKey{}, err
	}
	return CreatedKey{Key: secret, APIKey: FromKey(k)}, nil
}

func (h *Handler) get(ctx context.Context, in getQuery) (APIKey, error) {
	if in.ID == 0 {
		return APIKey{}, fieldError("id", "is required")
	}
	k, err := h.cfg.Keys.Get(ctx, in.ID)
	if err != nil {
		return APIKey{}, err
	}
	return FromKey(k), nil
}

// DefaultPageSize is how many keys a page of GET /api-key/list holds when
// the request does not say.
const DefaultPageSize = 50

func (h *Handler) list(ctx context.Context, in listQuery) (listResponse, error) {
	f := apikey.Filter{ReferenceID: in.ReferenceID, Prefix: in.Prefix, Enabled: in.Enabled}
	if in.ExpiringWithin != nil {
		d, err := seconds("expiringWithin", *in.ExpiringWithin)
		if err != nil {
			return listResponse{}, err
		}
		if d < 0 {
			return listResponse{}, fieldError("expiringWithin", "must not be negative")
		}
		f.ExpiresBefore = h.cfg.Clock().Add(d)
	}
	limit := in.Limit
	switch {
	case limit == 0:
		limit = DefaultPageSize
	case limit < 1 || limit > apikey.MaxPageSize:
		return listResponse{}, fieldError("limit", "must be 1 to %d", apikey.MaxPageSize)
	}
	if in.Cursor < 0 {
		return listResponse{}, fieldError("cursor", "must not be negative")
	}
	keys, next, err := h.cfg.Keys.Search(ctx, f, in.Cursor, int(limit))
	if err != nil {
		return listResponse{}, err
	}
	out := listResponse{APIKeys: make([]APIKey, 0, len(keys))}
	for _, k := range keys {
		out.APIKeys = append(out.APIKeys, FromKey(k))
	}
	if next != 0 {
		out.NextCursor = &next
	}
	return out, nil
}

func (h *Handler) update(ctx context.Context, in updateRequest) (APIKey, error) {
	if in.KeyID == 0 {
		return APIKey{}, fieldError("keyId", "is required")
	}
	u := apikey.UpdateParams{
		Name: in.Name, Enabled: in.Enabled, Metadata: in.Metadata, Permissions: in.Permissions,
		ResetRateLimit: in.ResetRateLimit, RestartRefill: in.RestartRefill,
	}
	var err error
	switch {
	case in.Remaining.Set && in.Remaining.Null:
		u.Unlimited = true
	case in.Remaining.Set:
		u.Remaining = ptr(in.Remaining.V)
	}
	switch {
	case in.ExpiresIn.Set && in.ExpiresIn.Null:
		u.ExpiresAt = &time.Time{}
	case in.ExpiresIn.Set:
		d, err := seconds("expiresIn", in.ExpiresIn.V)
		if err != nil {
			return APIKey{}, err
		}
		if d <= 0 {
			return APIKey{}, fieldError("expiresIn", "must be at least 1 second; null removes the expiry")
		}
		u.ExpiresAt = ptr(h.cfg.Clock().Add(d))
	}
	// A refill or a rate limit given in part keeps the rest as it is.
	var cur *apikey.Key
	partial := (in.RefillInterval == nil) != (in.RefillAmount == nil) ||
		(in.RateLimitTimeWindow == nil) != (in.RateLimitMax == nil) && (in.RateLimitEnabled == nil || *in.RateLimitEnabled)
	if partial {
		if cur, err = h.cfg.Keys.Get(ctx, in.KeyID); err != nil {
			return APIKey{}, err
		}
	}
	if in.RefillInterval != nil || in.RefillAmount != nil {
		r := apikey.Refill{}
		if cur != nil {
			r = cur.Refill
		}
		if in.RefillInterval != nil {
			if r.Interval, err = millis("refillInterval", *in.RefillInterval); err != nil {
				return APIKey{}, err
			}
		}
		if in.RefillAmount != nil {
			r.Amount = *in.RefillAmount
		}
		u.Refill = &r
	}
	if in.RateLimitEnabled != nil || in.RateLimitTimeWindow != nil || in.RateLimitMax != nil {
		rl := apikey.RateLimit{}
		if cur != nil && cur.RateLimit.Enabled {
			rl = cur.RateLimit
		}
		rl.Enabled = in.RateLimitEnabled == nil || *in.RateLimitEnabled
		if in.RateLimitTimeWindow != nil {
			if rl.Window, err = millis("rateLimitTimeWindow", *in.RateLimitTimeWindow); err != nil {
				return APIKey{}, err
			}
		}
		if in.RateLimitMax != nil {
			rl.Max = *in.RateLimitMax
		}
		if !rl.Enabled {
			rl = apikey.RateLimit{}
		}
		u.RateLimit = &rl
	}
	if u.Limits, err = namedLimits(in.Limits); err != nil {
		return APIKey{}, err
	}
	k, err := h.cfg.Keys.Update(ctx, in.KeyID, u)
	if err != nil {
		return APIKey{}, err
	}
	return FromKey(k), nil
}

func (h *Handler) reroll(ctx context.Context, in rerollRequest) (CreatedKey, error) {
	if in.KeyID == 0 {
		return CreatedKey{}, fieldError("keyId", "is required")
	}
	grace, err := millis("gracePeriod", in.GracePeriod)
	if err != nil {
		return CreatedKey{}, err
	}
	secret, k, err := h.cfg.Keys.Reroll(ctx, in.KeyID, grace)
	if err != nil {
		return CreatedKey{}, err
	}
	return CreatedKey{Key: secret, APIKey: FromKey(k)}, nil
}

func (h *Handler) delete(ctx context.Context, in keyIDRequest) (successResponse, error) {
	if in.KeyID == 0 {
		return successResponse{}, fieldError("keyId", "is required")
	}
	ok, err := h.cfg.Keys.Delete(ctx, in.KeyID)
	if err != nil {
		return successResponse{}, err
	}
	if !ok {
		return successResponse{}, &problem{status: http.StatusNotFound, field: "keyId", detail: fmt.Sprintf("there is no key %d", in.KeyID)}
	}
	return successResponse{Success: true}, nil
}

func (h *Handler) verify(ctx context.Context, in verifyRequest) (verifyResponse, error) {
	if in.Key == "" {
		return verifyResponse{}, fieldError("key", "is required")
	}
	var opts []apikey.VerifyOption
	if in.Permissions != nil {
		opts = append(opts, apikey.Permissions(in.Permissions))
	}
	r, err := h.cfg.Keys.Verify(ctx, in.Key, opts...)
	if err != nil {
		return verifyResponse{}, err
	}
	out := verifyResponse{Valid: r.Valid}
	if !r.Valid {
		out.Error = &verifyError{Code: string(r.Code), Message: r.Code.Message()}
	}
	if r.Key != nil {
		out.Key = ptr(FromKey(r.Key))
	}
	return out, nil
}

var errNoRecorder = &problem{status: http.StatusNotImplemented, detail: "the server keeps no events: give operator.Config a Recorder, and the manager its ObserveKeys"}

func (h *Handler) events(_ context.Context, in eventsQuery) (eventsResponse, error) {
	if in.ID == 0 {
		return eventsResponse{}, fieldError("id", "is required")
	}
	if h.cfg.Recorder == nil {
		return eventsResponse{}, errNoRecorder
	}
	return eventsResponse{Events: h.cfg.Recorder.history(in.ID)}, nil
}

func (h *Handler) rules(context.Context, struct{}) (rulesResponse, error) {
	return rulesResponse{Rules: h.ruleNames()}, nil
}

// rule looks up a rule by name, naming field when it is missing or unknown.
func (h *Handler) rule(field, name string) (ratelimit.Rule, error) {
	if name == "" {
		return ratelimit.Rule{}, fieldError(field, "is required")
	}
	r, ok := h.cfg.Rules[name]
	if !ok {
		names := make([]string, 0, len(h.cfg.Rules))
		for _, ri := range h.ruleNames() {
			names = append(names, ri.Name)
		}
		return ratelimit.Rule{}, fieldError(field, "%q is not a rule of this server (its rules: %s)", name, strings.Join(names, ", "))
	}
	return r, nil
}

func (h *Handler) limitGet(ctx context.Context, in limitQuery) (limitState, error) {
	rule, err := h.rule("rule", in.Rule)
	if err != nil {
		return limitState{}, err
	}
	if in.Key == "" {
		return limitState{}, fieldError("key", "is required")
	}
	d, err := h.cfg.Limiter.Check(ctx, in.Key, rule)
	if err != nil {
		return limitState{}, err
	}
	return limitState{Rule: in.Rule, Key: in.Key, Max: rule.Max, TimeWindow: rule.Window.Milliseconds(),
		Calendar: calendarOf(rule), Remaining: d.Remaining, Allowed: d.Allowed, Reset: d.Reset.UTC()}, nil
}

func (h *Handler) limitReset(ctx context.Context, in limitResetRequest) (successResponse, error) {
	rule, err := h.rule("rule", in.Rule)
	if err != nil {
		return successResponse{}, err
	}
	if in.Key == "" {
		return successResponse{}, fieldError("key", "is required")
	}
	if err := h.cfg.Limiter.ResetRule(ctx, in.Key, rule); err != nil {
		return successResponse{}, err
	}
	return successResponse{Success: true}, nil
}

// live streams a liveSample every LiveInterval until the client goes.
func (h *Handler) live(w http.ResponseWriter, r *http.Request) {
	var in liveQuery
	if err := decodeQuery(r, &in); err != nil {
		writeProblem(w, err, nil)
		return
	}
	var rule ratelimit.Rule
	byRule := in.Rule != ""
	if byRule {
		var err error
		if rule, err = h.rule("rule", in.Rule); err != nil {
			writeProblem(w, err, nil)
			return
		}
	}
	if h.cfg.Recorder == nil {
		writeProblem(w, errNoRecorder, nil)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeProblem(w, errors.New("operator: the response cannot stream"), nil)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	start := h.cfg.Recorder.counted(in.KeyID, rule, byRule)
	prev, prevAt := start, time.Now()
	tick := time.NewTicker(h.cfg.LiveInterval)
	defer tick.Stop()
	for {
		now := time.Now()
		cur := h.cfg.Recorder.counted(in.KeyID, rule, byRule)
		s := liveSample{At: now.UTC(), TotalAllowed: cur.allowed - start.allowed, TotalDenied: cur.denied - start.denied}
		if secs := now.Sub(prevAt).Seconds(); secs > 0 {
			s.Allowed, s.Denied = float64(cur.allowed-prev.allowed)/secs, float64(cur.denied-prev.denied)/secs
		}
		prev, prevAt = cur, now
		b, _ := json.Marshal(s)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
