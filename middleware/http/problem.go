package sluicehttp

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// QuotaExceededType is the problem type of a denial
// (draft-ietf-httpapi-ratelimit-headers, section 5.1): the requests
// exceed one or more quota policies.
const QuotaExceededType = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// Problem is the RFC 9457 problem details body (application/problem+json)
// of a denial when [RateLimitConfig].ProblemDetails or
// [APIKeyConfig].ProblemDetails is set:
//
//	{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",
//	 "title":"Request cannot be satisfied as assigned quota has been exceeded",
//	 "status":429,"detail":"Too many requests. Please try again in 7 seconds.",
//	 "violated-policies":["daily"],"code":"RATE_LIMITED","retryAfter":7}
//
// ViolatedPolicies names the rules that denied, as the RateLimit fields
// of [HeadersIETF] name them ("default" for a lone unnamed rule); shadow
// rules never appear. Code and RetryAfter are extension members, the
// same as [ErrorBody]'s, so that a client reads both bodies alike.
type Problem struct {
	Type             string   `json:"type"`
	Title            string   `json:"title"`
	Status           int      `json:"status"`
	Detail           string   `json:"detail,omitempty"`
	ViolatedPolicies []string `json:"violated-policies"`
	Code             string   `json:"code"`
	RetryAfter       int64    `json:"retryAfter,omitempty"`
}

// quotaExceeded is the problem of the denial d, decided at now under
// rule (see [HeaderStyle.SetHeaders]).
func quotaExceeded(rule ratelimit.Rule, d ratelimit.Decision, now time.Time) Problem {
	rules := d.PerRuleOf(rule)
	secs := retryAfter(d, rules, now)
	detail := "Too many requests."
	switch {
	case secs == 1:
		detail = "Too many requests. Please try again in 1 second."
	case secs > 1:
		detail = "Too many requests. Please try again in " + strconv.FormatInt(secs, 10) + " seconds."
	}
	return Problem{Type: QuotaExceededType, Title: "Request cannot be satisfied as assigned quota has been exceeded",
		Status: http.StatusTooManyRequests, Detail: detail,
		ViolatedPolicies: violated(rules), Code: CodeRateLimited, RetryAfter: secs}
}

// writeProblem answers p as application/problem+json. The style set
// Retry-After already (or, for none, chose not to).
func writeProblem(w http.ResponseWriter, p Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}
