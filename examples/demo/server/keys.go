package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

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
}

// Duration is a time.Duration written as in Go ("10s", "1m30s") in JSON.
type Duration time.Duration

// UnmarshalJSON reads a duration string such as "10s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"10s\" or \"1m\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string such as "10s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// params turns a request into the key manager's parameters, on top of the
// server's defaults.
func (req KeyRequest) params(def KeyDefaults) (apikey.CreateParams, error) {
	p := apikey.CreateParams{
		ReferenceID: req.Owner,
		Name:        req.Name,
		Prefix:      KeyPrefix,
	}
	if p.ReferenceID == "" {
		p.ReferenceID = "demo-user"
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
	if refill.Interval == 0 {
		if req.RefillAmount != nil {
			return p, fmt.Errorf("%w: refillAmount needs a positive refillEvery", core.ErrInvalid)
		}
		refill = apikey.Refill{}
	}
	switch {
	case req.Unlimited && (req.Quota != nil || req.RefillEvery != nil || req.RefillAmount != nil):
		return p, fmt.Errorf("%w: unlimited excludes quota, refillEvery and refillAmount", core.ErrInvalid)
	case req.Unlimited:
	default:
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
		if *req.ExpiresIn <= 0 {
			return p, fmt.Errorf("%w: expiresIn must be positive, got %v", core.ErrInvalid, time.Duration(*req.ExpiresIn))
		}
		p.ExpiresIn = time.Duration(*req.ExpiresIn)
	}
	return p, nil
}

// createKey creates a key and shows its plaintext, once: only its hash is
// stored.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req KeyRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) { // an empty body takes the defaults
		writeJSON(w, http.StatusBadRequest, errorBody("INVALID_REQUEST", "bad JSON body: "+err.Error()))
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
