package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"time"
	"unicode/utf8"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
)

// KeyRequest is the optional JSON body of POST /keys. Every field is
// optional; an absent one takes the server's default (Config.Key).
type KeyRequest struct {
	Name  string `json:"name,omitempty"`
	Owner string `json:"owner,omitempty"` // the key's reference id; default "demo-user"
	// Quota is how many requests the key may make; Unlimited removes it.
	Quota     *int64 `json:"quota,omitempty"`
	Unlimited bool   `json:"unlimited,omitempty"`
	// RefillEvery ("1m", "0s" for no refill) and RefillAmount restore the
	// quota periodically.
	RefillEvery  *Duration `json:"refillEvery,omitempty"`
	RefillAmount *int64    `json:"refillAmount,omitempty"`
	// RateLimit is the most requests per RateLimitWindow; 0 disables it.
	RateLimit       *int64    `json:"rateLimit,omitempty"`
	RateLimitWindow *Duration `json:"rateLimitWindow,omitempty"`
	// ExpiresIn, when set, makes the key expire that long after creation.
	ExpiresIn *Duration `json:"expiresIn,omitempty"`
	// Permissions lists what the key may do, resource → actions, such as
	// {"data":["write"]} for POST /api/data.
	Permissions map[string][]string `json:"permissions,omitempty"`
}

// Duration is a time.Duration written as in Go ("10s", "1m30s") in JSON.
type Duration time.Duration

// UnmarshalJSON reads a duration string such as "10s". Its error is a
// *json.UnmarshalTypeError, to which the decoder adds the JSON field's name.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	v, err := time.Duration(0), json.Unmarshal(b, &s)
	if err == nil {
		v, err = time.ParseDuration(s)
	}
	if err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[Duration]()}
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string such as "10s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// params turns a request into the key manager's parameters, on top of the
// server's defaults.
//
// Every limit the key manager enforces on these values is checked here
// first, so that an error names the field as the request body spells it
// (refillEvery), not the manager's (Refill.Interval).
func (req KeyRequest) params(def KeyDefaults) (apikey.CreateParams, error) {
	p := apikey.CreateParams{
		ReferenceID: req.Owner,
		Name:        req.Name,
		Prefix:      KeyPrefix,
		Permissions: req.Permissions,
	}
	if p.ReferenceID == "" {
		p.ReferenceID = "demo-user"
	}
	switch {
	case len(req.Owner) > 255:
		return p, invalid("owner is longer than 255 bytes")
	case !utf8.ValidString(req.Name) || utf8.RuneCountInString(req.Name) > apikey.MaxNameLength:
		return p, invalid("name must be valid UTF-8 of at most %d characters", apikey.MaxNameLength)
	case req.Quota != nil && *req.Quota < 0:
		return p, invalid("quota %d is negative", *req.Quota)
	case req.RefillAmount != nil && *req.RefillAmount <= 0:
		return p, invalid("refillAmount must be positive, got %d (for no refill, set refillEvery to \"0s\")", *req.RefillAmount)
	case req.RateLimit != nil && *req.RateLimit < 0:
		return p, invalid("rateLimit %d is negative (0 turns the rate limit off)", *req.RateLimit)
	case req.Unlimited && (req.Quota != nil || req.RefillEvery != nil || req.RefillAmount != nil):
		return p, invalid("unlimited excludes quota, refillEvery and refillAmount")
	}
	if err := checkMillis("refillEvery", req.RefillEvery, true); err != nil {
		return p, err
	}
	if err := checkMillis("rateLimitWindow", req.RateLimitWindow, false); err != nil {
		return p, err
	}
	if err := checkMillis("expiresIn", req.ExpiresIn, false); err != nil {
		return p, err
	}
	quota := def.Quota
	if req.Quota != nil {
		quota = *req.Quota
	}
	refill := apikey.Refill{Interval: def.RefillInterval, Amount: def.RefillAmount}
	if req.Quota != nil && req.RefillAmount == nil {
		refill.Amount = quota // a custom quota refills to itself
	}
	if req.RefillEvery != nil {
		refill.Interval = time.Duration(*req.RefillEvery)
	}
	if req.RefillAmount != nil {
		refill.Amount = *req.RefillAmount
	}
	switch {
	case refill.Interval == 0 && req.RefillAmount != nil:
		return p, invalid("refillAmount needs a positive refillEvery")
	case refill.Interval == 0:
		refill = apikey.Refill{}
	case refill.Amount == 0 && !req.Unlimited:
		return p, invalid("quota 0 would refill to 0: set refillAmount, or refillEvery \"0s\" for no refill")
	}
	if !req.Unlimited {
		p.Remaining, p.Refill = &quota, refill
	}
	rl := apikey.RateLimit{Enabled: true, Max: def.RateMax, Window: def.RateWindow}
	if req.RateLimit != nil {
		rl.Max = *req.RateLimit
		rl.Enabled = rl.Max > 0
	}
	if req.RateLimitWindow != nil {
		rl.Window = time.Duration(*req.RateLimitWindow)
	}
	p.RateLimit = &rl
	if req.ExpiresIn != nil {
		p.ExpiresIn = time.Duration(*req.ExpiresIn)
	}
	return p, nil
}

// checkMillis holds a duration field to what the key manager stores: a
// positive whole number of milliseconds (or zero, where zero means none).
func checkMillis(field string, d *Duration, zeroOK bool) error {
	switch {
	case d == nil || (zeroOK && *d == 0):
		return nil
	case *d <= 0:
		return invalid("%s must be positive, got %v", field, time.Duration(*d))
	case time.Duration(*d)%time.Millisecond != 0:
		return invalid("%s must be a whole number of milliseconds, got %v", field, time.Duration(*d))
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", core.ErrInvalid, fmt.Sprintf(format, args...))
}

// bodyError explains a body that does not decode into a KeyRequest, naming
// the field as the body spells it: encoding/json's own message names the
// Go struct field ("Go struct field KeyRequest.quota").
func bodyError(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return "bad JSON body: " + err.Error() // syntax, unknown field: already in the body's terms
	}
	if te.Field == "" {
		return "the body must be a JSON object, not " + te.Value
	}
	want := "a whole number"
	switch te.Type {
	case reflect.TypeFor[Duration]():
		want = `a duration string such as "10s" or "1m30s"`
	case reflect.TypeFor[string]():
		want = "a string"
	case reflect.TypeFor[bool]():
		want = "true or false"
	}
	return fmt.Sprintf("%s must be %s, not %s", te.Field, want, te.Value)
}

// createKey creates a key and shows its plaintext, once: only its hash is
// stored.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req KeyRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) { // an empty body takes the defaults
		writeJSON(w, http.StatusBadRequest, errorBody("INVALID_REQUEST", bodyError(err)))
		return
	}
	p, err := req.params(s.cfg.Key)
	var plaintext string
	var k *apikey.Key
	if err == nil {
		plaintext, k, err = s.Keys.Create(r.Context(), p)
	}
	switch {
	case errors.Is(err, core.ErrInvalid):
		writeJSON(w, http.StatusBadRequest, errorBody("INVALID_REQUEST", err.Error()))
		return
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, errorBody("INTERNAL_ERROR", err.Error()))
		return
	}
	body := map[string]any{"key": plaintext, "note": "store this key now: the server keeps only its hash"}
	for name, v := range describeKey(k) {
		body[name] = v
	}
	writeJSON(w, http.StatusCreated, body)
}

// RerollRequest is the optional JSON body of POST /keys/reroll.
type RerollRequest struct {
	// Grace is how long the old plaintext keeps working ("0s": it stops at
	// once); default one minute.
	Grace *Duration `json:"grace,omitempty"`
}

// DefaultRerollGrace is the grace of a reroll that names none.
const DefaultRerollGrace = time.Minute

// rerollKey gives the key in the x-api-key header a new plaintext and shows
// it, once: the key rotates itself, so only its holder can. A key whose
// quota or rate limit is spent may still rotate; an invalid, disabled or
// expired one is answered as the API answers it.
func (s *Server) rerollKey(w http.ResponseWriter, r *http.Request) {
	var req RerollRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		writeJSON(w, http.StatusBadRequest, errorBody("INVALID_REQUEST", bodyError(err)))
		return
	}
	if err := checkMillis("grace", req.Grace, true); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("INVALID_REQUEST", err.Error()))
		return
	}
	grace := DefaultRerollGrace
	if req.Grace != nil {
		grace = time.Duration(*req.Grace)
	}
	current := r.Header.Get("x-api-key")
	if current == "" {
		writeJSON(w, http.StatusUnauthorized, errorBody("MISSING_API_KEY", "send the key to rotate in the x-api-key header"))
		return
	}
	res, err := s.Keys.Verify(r.Context(), current, apikey.Cost(0)) // spends nothing
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, errorBody("INTERNAL_ERROR", err.Error()))
		return
	}
	if res.Key == nil || (!res.Valid && res.Code != apikey.CodeUsageExceeded && res.Code != apikey.CodeRateLimited) {
		writeJSON(w, res.Status, errorBody(string(res.Code), "this key cannot be rotated"))
		return
	}
	plaintext, k, err := s.Keys.Reroll(r.Context(), res.Key.ID, grace)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, errorBody("INTERNAL_ERROR", err.Error()))
		return
	}
	body := map[string]any{"key": plaintext, "oldKeyWorksFor": Duration(grace),
		"note": "store this key now: the server keeps only its hash"}
	for name, v := range describeKey(k) {
		body[name] = v
	}
	writeJSON(w, http.StatusOK, body)
}

// describeKey is what the demo shows of a key.
func describeKey(k *apikey.Key) map[string]any {
	d := map[string]any{
		"id":           k.ID,
		"name":         k.Name,
		"start":        k.Start,
		"remaining":    "unlimited",
		"requestCount": k.RequestCount,
		"rateLimit":    nil,
		"refill":       nil,
		"expiresAt":    nil,
	}
	if k.Remaining != nil {
		d["remaining"] = *k.Remaining
	}
	if k.RateLimit.Enabled {
		d["rateLimit"] = map[string]any{"max": k.RateLimit.Max, "window": Duration(k.RateLimit.Window)}
	}
	if k.Refill != (apikey.Refill{}) {
		d["refill"] = map[string]any{"every": Duration(k.Refill.Interval), "amount": k.Refill.Amount}
	}
	if !k.ExpiresAt.IsZero() {
		d["expiresAt"] = k.ExpiresAt
	}
	return d
}

func errorBody(code, message string) map[string]any {
	return map[string]any{"code": code, "message": message}
}
