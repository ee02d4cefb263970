// Package httperr writes the error responses of sluice's HTTP middleware
// (ratelimit.Middleware and apikey's Manager.Middleware), so that both
// answer in one shape: the same JSON body, the same RateLimit-* and
// Retry-After headers on 429, WWW-Authenticate on 401.
package httperr

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Body is the JSON body of every error response of sluice's middleware:
//
//	{"code":"RATE_LIMITED","message":"Too many requests. Please try again later.","status":429,"retryAfter":7}
//
// Code is stable and meant for programs (switch on it); Message is for
// people and may change. Status repeats the response's HTTP status.
// RetryAfter, in whole seconds rounded up, is there when waiting helps:
// it equals the Retry-After header, and is omitted (0) otherwise.
type Body struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Status     int    `json:"status"`
	RetryAfter int64  `json:"retryAfter,omitempty"`
}

// StatusClientClosedRequest is the status recorded when the client hung up
// before the middleware decided (nginx's 499): nobody reads it, but logs
// and metrics then tell a departed client from an outage (503).
const StatusClientClosedRequest = 499

// Write answers b: Content-Type application/json, Retry-After and
// X-Retry-After when b.RetryAfter > 0, then b.Status and b as JSON.
// Headers set on w before the call (RateLimit-*, WWW-Authenticate) are kept.
func Write(w http.ResponseWriter, b Body) {
	if b.RetryAfter > 0 {
		secs := strconv.FormatInt(b.RetryAfter, 10)
		h := w.Header()
		h.Set("Retry-After", secs)
		h.Set("X-Retry-After", secs)
	}
	WriteBody(w, b)
}

// WriteBody answers b as Write does but sets no Retry-After header, for a
// caller that chose its headers itself: Content-Type application/json,
// then b.Status and b as JSON.
func WriteBody(w http.ResponseWriter, b Body) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(b.Status)
	_ = json.NewEncoder(w).Encode(b)
}

// SetRateLimit sets RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset (seconds until the window ends, or the quota refills).
// A negative value leaves its header unset: there is nothing to announce.
func SetRateLimit(h http.Header, limit, remaining, reset int64) {
	set := func(name string, v int64) {
		if v >= 0 {
			h.Set(name, strconv.FormatInt(v, 10))
		}
	}
	set("RateLimit-Limit", limit)
	set("RateLimit-Remaining", remaining)
	set("RateLimit-Reset", reset)
}

// Seconds rounds d up to whole seconds, so that a client waiting that long
// is admitted; 0 for d <= 0.
func Seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
