package sluicehttp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
)

// ErrorBody is the JSON body of every error response of [RateLimit] and
// [APIKey], so that a client handles both alike:
//
//	{"code":"RATE_LIMITED","message":"Too many requests. Please try again later.","status":429,"retryAfter":7}
//
// Code is stable and meant for programs (switch on it): one of the Code
// constants of this package, or a denial code of apikey.Result. Message is
// for people and may change. Status repeats the response's HTTP status.
// RetryAfter, in whole seconds rounded up, is there when waiting helps: it
// equals the Retry-After header, and is omitted (0) otherwise.
type ErrorBody struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Status     int    `json:"status"`
	RetryAfter int64  `json:"retryAfter,omitempty"`
}

// The codes of the middleware's own answers; an API key's denials carry
// the apikey.Code of its Result (apikey.CodeInvalid, apikey.CodeRateLimited
// and the others).
const (
	// CodeRateLimited answers 429 from [RateLimit]: the client's window is
	// full. It is the value of apikey.CodeRateLimited too.
	CodeRateLimited = "RATE_LIMITED"
	// CodeUnavailable answers 503 from [RateLimit]: the limiter failed
	// (and fails closed), or the request's deadline passed before it
	// decided.
	CodeUnavailable = "RATE_LIMIT_UNAVAILABLE"
	// CodeKeyFailed answers 500 from [RateLimit]: [RateLimitConfig].Key
	// failed or returned an empty key, so the request could not be counted.
	CodeKeyFailed = "RATE_LIMIT_KEY_FAILED"
	// CodeMissingKey answers 401 from [APIKey]: the request carries no key.
	CodeMissingKey = "MISSING_API_KEY"
	// CodeContention answers 503 from [APIKey]: the key is too busy to
	// verify (core.ErrContention), and trying again may succeed.
	CodeContention = "CONTENTION"
	// CodeInternal answers 500 from [APIKey]: verification failed.
	CodeInternal = "INTERNAL_ERROR"
)

// statusClientClosedRequest is the status recorded when the client hung up
// before the middleware decided (nginx's 499): nobody reads it, but logs
// and metrics then tell a departed client from an outage (503).
const statusClientClosedRequest = 499

// writeError answers b: Content-Type application/json, Retry-After and
// X-Retry-After when b.RetryAfter > 0, then b.Status and b as JSON.
// Headers set on w before the call (RateLimit-*, WWW-Authenticate) are kept.
func writeError(w http.ResponseWriter, b ErrorBody) {
	if b.RetryAfter > 0 {
		secs := strconv.FormatInt(b.RetryAfter, 10)
		h := w.Header()
		h.Set("Retry-After", secs)
		h.Set("X-Retry-After", secs)
	}
	writeBody(w, b)
}

// writeBody answers b as writeError does but sets no Retry-After header,
// for a caller that chose its headers itself.
func writeBody(w http.ResponseWriter, b ErrorBody) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(b.Status)
	_ = json.NewEncoder(w).Encode(b)
}

// setRateLimit sets RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset (seconds until the window ends, or the quota refills).
// A negative value leaves its header unset: there is nothing to announce.
func setRateLimit(h http.Header, limit, remaining, reset int64) {
	set := func(name string, v int64) {
		if v >= 0 {
			h.Set(name, strconv.FormatInt(v, 10))
		}
	}
	set("RateLimit-Limit", limit)
	set("RateLimit-Remaining", remaining)
	set("RateLimit-Reset", reset)
}

// seconds rounds d up to whole seconds, so that a client waiting that long
// is admitted; 0 for d <= 0.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// invalidf builds an error for a bad configuration, wrapping
// core.ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("sluicehttp: %w: %s", core.ErrInvalid, fmt.Sprintf(format, args...))
}

// invalidIn reports err, an error of ratelimit or apikey wrapping
// core.ErrInvalid, as the fault of the configuration field where: it still
// wraps err, and says "invalid request" once, after this package's name,
// as every error of invalidf does:
//
//	sluicehttp: invalid request: RateLimitConfig.Default: rule max -2 must not be negative
func invalidIn(where string, err error) error {
	msg := leads.ReplaceAllString(err.Error(), "")
	return &configError{msg: invalidf("%s: %s", where, msg).Error(), err: err}
}

// leads matches what a package's errors for bad input start with, such as
// "ratelimit: invalid request: ", wherever an error repeats it.
var leads = regexp.MustCompile(`\b[a-z]+: ` + regexp.QuoteMeta(core.ErrInvalid.Error()) + `: `)

// configError is a message of this package around an error of another.
type configError struct {
	msg string
	err error
}

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return e.err }

// isToken reports whether s is an HTTP token (RFC 9110), as a header
// field name is: one or more of the letters, digits and !#$%&'*+-.^_`|~.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}
