package sluicehttp

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// HeaderStyle chooses the rate-limit headers [RateLimit] sets on the
// responses it limits. Every style but [HeadersNone] also sets Retry-After
// (whole seconds, rounded up) on 429.
//
// The zero value stays the headers of earlier drafts, which most clients
// read and [APIKey] sets too: choose [HeadersIETF] for the current draft's
// fields, which alone describe every rule of a policy.
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
	// (draft-ietf-httpapi-ratelimit-headers, revisions 08 to 12), one
	// member per rule of the decision, in the policy's order:
	//
	//	RateLimit-Policy: "burst";q=100;w=60, "daily";q=1000;w=86400
	//	RateLimit: "burst";r=42;t=17, "daily";r=958;t=51203
	//
	// Each is named by its rule's Name, a lone unnamed rule "default",
	// which ties a policy's two members together. q is the rule's Max, w
	// its window in seconds, r what it has left and t the seconds until its
	// window ends (or, denying, until it admits the request), rounded up.
	// Retry-After is never less than a denying rule's t.
	//
	// A window must be a whole number of seconds, as w is: [RateLimit]
	// refuses a configured rule whose window is not, and a rule
	// [RateLimitConfig].RuleFor returns per request with such a window is
	// reported without w (the draft makes w optional), never with a
	// rounded one; so is a calendar rule (ratelimit.Rule.Calendar), whose
	// day or month has no fixed length.
	//
	// A shadow rule (ratelimit.Rule.Shadow: counted, never denying) is
	// reported like the others, so that clients see a limit before it is
	// enforced, with the parameter sluice-shadow ([ShadowParam]) on both
	// members: "new";q=10;w=60;sluice-shadow. It never makes a 429, and
	// never counts in Retry-After or violated-policies; [Transport] ignores
	// it, and a client that does not know the parameter may see r=0 for a
	// rule that does not deny.
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

// SetHeaders sets on h the style's headers for d, decided at now under
// rule (for a policy's decision, whose Rules carry their rules, rule is
// not read); on a denial also Retry-After (and, in the default style,
// X-Retry-After). It is what [RateLimit] writes, for other servers to
// write the same: sluice's gRPC interceptors send it as metadata.
//
// [HeadersIETF] writes one member per rule of the decision
// (d.PerRuleOf(rule)), in the policy's order, named by the rule's Name
// ("default" for a lone unnamed rule); the other styles describe the
// binding rule (d's own Limit, Remaining and Reset).
//
// A negative Limit is unknown and a zero Reset is none, as an API key's
// quota that never refills has neither ([APIKey]): their headers and
// parameters are left out (RateLimit-Limit, the member of
// RateLimit-Policy, RateLimit-Reset, t), and a denial with no reset and
// no RetryAfter names no time, so it carries no Retry-After.
func (s HeaderStyle) SetHeaders(h http.Header, rule ratelimit.Rule, d ratelimit.Decision, now time.Time) {
	switch s {
	case HeadersDefault:
		reset := int64(-1)
		if !d.Reset.IsZero() {
			reset = seconds(d.Reset.Sub(now))
		}
		setRateLimit(h, d.Limit, d.Remaining, reset)
	case HeadersIETF:
		policy, limit := ietfFields(d.PerRuleOf(rule), now)
		h.Set("RateLimit-Policy", policy)
		h.Set("RateLimit", limit)
	case HeadersLegacy:
		if d.Limit >= 0 {
			h.Set("X-RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
		}
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
		if !d.Reset.IsZero() {
			h.Set("X-RateLimit-Reset", strconv.FormatInt((d.Reset.UnixMilli()+999)/1000, 10))
		}
	default:
		return
	}
	if secs := retryAfter(d, d.PerRuleOf(rule), now); !d.Allowed && secs > 0 {
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
		if s == HeadersDefault {
			h.Set("X-Retry-After", strconv.FormatInt(secs, 10))
		}
	}
}

// ietfFields are the RateLimit-Policy and RateLimit fields of d: for each
// rule, "name";q=Max;w=Window and "name";r=Remaining;t=Reset, with w only
// for a window of whole seconds, ;sluice-shadow after a shadow rule's, no
// policy member for an unknown Limit (negative) and no t without a Reset.
func ietfFields(rules []ratelimit.RuleDecision, now time.Time) (policy, limit string) {
	var p, l strings.Builder
	for i, r := range rules {
		if i > 0 {
			l.WriteString(", ")
		}
		name := quoteSF(r.Name)
		if r.Limit >= 0 {
			if p.Len() > 0 {
				p.WriteString(", ")
			}
			p.WriteString(name + ";q=" + strconv.FormatInt(r.Limit, 10))
			if w := r.Rule.Window; w > 0 && w%time.Second == 0 {
				p.WriteString(";w=" + strconv.FormatInt(int64(w/time.Second), 10))
			}
			if r.Shadow {
				p.WriteString(";" + ShadowParam)
			}
		}
		l.WriteString(name + ";r=" + strconv.FormatInt(max(r.Remaining, 0), 10))
		if !r.Reset.IsZero() {
			l.WriteString(";t=" + strconv.FormatInt(seconds(r.Reset.Sub(now)), 10))
		}
		if r.Shadow {
			l.WriteString(";" + ShadowParam)
		}
	}
	return p.String(), l.String()
}

// CheckRule reports, wrapping core.ErrInvalid, why the style cannot
// describe rule, or nil: under [HeadersIETF] the window must be a whole
// number of seconds, as w is. (A rule's name is always one the fields can
// hold: ratelimit validates it.) [RateLimit] checks every configured rule
// with it, and sluice's gRPC interceptors every rule of theirs.
func (s HeaderStyle) CheckRule(rule ratelimit.Rule) error {
	if s != HeadersIETF || rule == ratelimit.Unlimited {
		return nil
	}
	if w := rule.Window; w > 0 && w%time.Second != 0 {
		return invalidf("rule window %v is not a whole number of seconds, as the RateLimit-Policy field's w must be (HeadersIETF)", w)
	}
	return nil
}

// checkRule is CheckRule for the rule configured at where.
func (s HeaderStyle) checkRule(where string, rule ratelimit.Rule) error {
	if err := s.CheckRule(rule); err != nil {
		return invalidIn(where, err)
	}
	return nil
}

// retryAfter is how long a denied client waits, in whole seconds rounded
// up and at least 1: the longest wait of the rules that deny, and never
// less than any of their t (seconds until Reset), so that Retry-After
// never points before the end of a denying rule's effective window. A
// denial that names no time (no RetryAfter, no Reset: a quota that never
// refills) has none: 0.
func retryAfter(d ratelimit.Decision, rules []ratelimit.RuleDecision, now time.Time) int64 {
	if d.RetryAfter <= 0 && d.Reset.IsZero() {
		return 0
	}
	secs := max(seconds(d.RetryAfter), 1)
	for _, r := range rules {
		if !r.Allowed && !r.Shadow {
			secs = max(secs, seconds(r.RetryAfter), seconds(r.Reset.Sub(now)))
		}
	}
	return secs
}

// ViolatedPolicies returns the names of the rules that denied d, decided
// under rule (not read for a policy's decision), in the policy's order:
// the violated-policies of its [Problem]. Shadow rules are never among
// them. sluice's gRPC interceptors send them in the denial's ErrorInfo.
func ViolatedPolicies(rule ratelimit.Rule, d ratelimit.Decision) []string {
	return violated(d.PerRuleOf(rule))
}

func violated(rules []ratelimit.RuleDecision) []string {
	names := []string{}
	for _, r := range rules {
		if !r.Allowed && !r.Shadow {
			names = append(names, r.Name)
		}
	}
	return names
}
