package sluicehttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// HeaderStyle chooses the rate-limit headers [RateLimit] sets on the
// responses it limits. Every style but [HeadersNone] also sets Retry-After
// (whole seconds, rounded up) on 429.
type HeaderStyle int

// The header styles.
const (
	// HeadersDefault, the zero value, sets RateLimit-Limit,
	// RateLimit-Remaining and RateLimit-Reset (seconds until the window
	// ends, rounded up), and on 429 Retry-After and X-Retry-After: the
	// headers of earlier drafts of the IETF httpapi rate-limit document,
	// which most clients read, and [APIKey] sets the same.
	HeadersDefault HeaderStyle = iota
	// HeadersIETF sets the two fields of the current IETF draft
	// (draft-ietf-httpapi-ratelimit-headers, revisions 08 to 11):
	//
	//	RateLimit-Policy: "default";q=100;w=60
	//	RateLimit: "default";r=42;t=17
	//
	// q is the rule's Max, w its window in seconds (rounded up), r the
	// requests remaining and t the seconds until the window ends (rounded
	// up). The policy is named "default" in both, which ties them together.
	HeadersIETF
	// HeadersLegacy sets X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset, the last as the Unix time in seconds (rounded up)
	// when the window ends, as GitHub, go-chi/httprate and ulule/limiter
	// write it.
	HeadersLegacy
	// HeadersNone sets no rate-limit header at all, not even Retry-After.
	HeadersNone
)

// String names the style as its constant does, without "Headers".
func (s HeaderStyle) String() string {
	switch s {
	case HeadersDefault:
		return "Default"
	case HeadersIETF:
		return "IETF"
	case HeadersLegacy:
		return "Legacy"
	case HeadersNone:
		return "None"
	}
	return "HeaderStyle(" + strconv.Itoa(int(s)) + ")"
}

func (s HeaderStyle) valid() bool { return s >= HeadersDefault && s <= HeadersNone }

// setHeaders sets the style's headers for d, decided under rule at now;
// on a denial also Retry-After (and, in the default style, X-Retry-After).
func (s HeaderStyle) setHeaders(h http.Header, rule ratelimit.Rule, d ratelimit.Decision, now time.Time) {
	reset := seconds(d.Reset.Sub(now))
	switch s {
	case HeadersDefault:
		setRateLimit(h, d.Limit, d.Remaining, reset)
	case HeadersIETF:
		h.Set("RateLimit-Policy", `"default";q=`+strconv.FormatInt(d.Limit, 10)+";w="+strconv.FormatInt(seconds(rule.Window), 10))
		h.Set("RateLimit", `"default";r=`+strconv.FormatInt(d.Remaining, 10)+";t="+strconv.FormatInt(reset, 10))
	case HeadersLegacy:
		h.Set("X-RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt((d.Reset.UnixMilli()+999)/1000, 10))
	case HeadersNone:
		return
	}
	if !d.Allowed {
		secs := strconv.FormatInt(retryAfter(d), 10)
		h.Set("Retry-After", secs)
		if s == HeadersDefault {
			h.Set("X-Retry-After", secs)
		}
	}
}

// retryAfter is how long a denied client waits, in whole seconds rounded
// up and at least 1.
func retryAfter(d ratelimit.Decision) int64 { return max(seconds(d.RetryAfter), 1) }
