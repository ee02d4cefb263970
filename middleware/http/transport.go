package sluicehttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// DefaultMaxRetries is how many times a [Transport] whose MaxRetries is 0
// sends a request again after denials.
const DefaultMaxRetries = 3

// Transport is the client side of [RateLimit]: an http.RoundTripper that
// reads a denial's Retry-After, RateLimit and RateLimit-Policy fields and
// waits and retries, or fails fast, so that a Go client of a limited
// service backs off as the service asks.
//
// A response is a denial when its status is 429, or 503 with a
// Retry-After. Its wait is Retry-After when present (the draft says it
// takes precedence); else, for a 429, the longest t of the RateLimit
// members with r=0 that are not shadow ([ShadowParam]); else unknown. A
// malformed field is ignored, as the draft requires. Every other response
// (a 503 without Retry-After included) is returned as it is.
//
// A denial is retried when the wait is known and fits in what is left of
// MaxWait, before the request's context's deadline, and the request's
// body can be sent again (it has none, or its GetBody is set, as
// http.NewRequest sets it for in-memory bodies); at most MaxRetries
// times. Otherwise the transport fails fast: it closes the denial's body
// and returns a [*RateLimitedError] that carries the wait, as the
// http.Client's error. The zero Transport never waits, as its MaxWait is
// 0: it fails fast on every denial that asks for a wait, and sends a
// request whose denial asks for none (Retry-After: 0) again at once, at
// most [DefaultMaxRetries] times.
//
// Any method is retried: a denial means the service did not act on the
// request. A Transport is safe for concurrent use when Base is.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// MaxWait bounds the time one request waits, across all its retries;
	// 0 never waits. A response asking for more fails fast with the wait
	// it asked for, however long, hostile values included.
	MaxWait time.Duration
	// MaxRetries is how many times a request is sent again after a
	// denial; 0 means [DefaultMaxRetries], a negative value none.
	MaxRetries int
	// Sleep waits d or until ctx is done, returning ctx's error then; nil
	// means a timer. Tests inject one that advances a fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the time a Retry-After date is read against when the
	// response has no Date, and the time compared with the request's
	// deadline; nil means time.Now.
	Now func() time.Time
	// Partition, when set, paces requests, as the draft asks a client not
	// to exceed the available quota within the effective window: it names
	// the partition a request's quota belongs to (its URL's host for a
	// per-client limit, host and path for sluicehttp.RateLimit's default
	// key per client and path). After a response of the partition says a
	// policy is exhausted (a RateLimit member with r=0 and t, shadow ones
	// aside), or a denial how long to wait, the partition's next requests
	// wait until then before they are sent, within MaxWait and the
	// deadline as for a denial; otherwise they fail fast with a
	// [*RateLimitedError] whose StatusCode is 0, nothing sent. nil sends
	// every request at once.
	Partition func(r *http.Request) string

	pace pacer
}

// RateLimitedError is the error of a [Transport] that fails fast on a
// denial: the service answered StatusCode and asked to wait Wait.
type RateLimitedError struct {
	// StatusCode is the denial's status: 429, or 503.
	StatusCode int
	// Wait is how long the service asked to wait; 0 with WaitKnown false
	// when it did not say.
	Wait time.Duration
	// WaitKnown reports whether the denial said how long to wait.
	WaitKnown bool
	// Limits and Policies are the denial's RateLimit and RateLimit-Policy
	// members, nil when absent or malformed.
	Limits   []ServiceLimit
	Policies []QuotaPolicy
	// Header is the denial's header.
	Header http.Header
	// Reason says why the transport did not wait: "no wait", "over
	// MaxWait", "past the deadline", "body not replayable" or "retries
	// exhausted".
	Reason string
}

func (e *RateLimitedError) Error() string {
	wait := "no wait given"
	if e.WaitKnown {
		wait = "wait " + e.Wait.String()
	}
	return "sluicehttp: rate limited (" + strconv.Itoa(e.StatusCode) + ", " + wait + "): " + e.Reason
}

// RoundTrip sends req and, on a denial, waits and sends it again or fails
// fast, as [Transport] says.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	retries := t.MaxRetries
	if retries == 0 {
		retries = DefaultMaxRetries
	}
	ctx := req.Context()
	budget := t.MaxWait
	part := ""
	if t.Partition != nil {
		part = t.Partition(req)
		waited, err := t.paced(ctx, part, budget)
		if err != nil {
			return nil, err
		}
		budget -= waited
	}
	for attempt := 0; ; attempt++ {
		resp, err := base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		now := t.now()
		e := denial(resp, now)
		if t.Partition != nil {
			t.pace.record(part, resp.Header, e, now)
		}
		if e == nil {
			return resp, nil
		}
		e.Reason = t.hold(ctx, req, e, attempt, retries, budget)
		drain(resp.Body)
		if e.Reason != "" {
			return nil, e
		}
		if err := t.sleep(ctx, e.Wait); err != nil {
			return nil, err
		}
		budget -= e.Wait
		if req, err = again(req); err != nil {
			return nil, err
		}
	}
}

// hold says why the denial e of the attempt'th try of req cannot be
// waited for, or "".
func (t *Transport) hold(ctx context.Context, req *http.Request, e *RateLimitedError, attempt, retries int, budget time.Duration) string {
	if !e.WaitKnown {
		return "no wait"
	}
	if why := t.fits(ctx, e.Wait, budget); why != "" {
		return why
	}
	switch {
	case attempt >= retries:
		return "retries exhausted"
	case req.Body != nil && req.Body != http.NoBody && req.GetBody == nil:
		return "body not replayable"
	}
	return ""
}

// fits says why waiting wait is out of the question, or "": it is over
// what is left of MaxWait, or ends past ctx's deadline.
func (t *Transport) fits(ctx context.Context, wait, budget time.Duration) string {
	deadline, hasDeadline := ctx.Deadline()
	switch {
	case wait > budget:
		return fmt.Sprintf("over MaxWait (%v left)", max(budget, 0))
	case hasDeadline && !t.now().Add(wait).Before(deadline):
		return "past the deadline"
	}
	return ""
}

// paced waits until the partition part may send again, and returns how
// long it waited, or fails fast.
func (t *Transport) paced(ctx context.Context, part string, budget time.Duration) (time.Duration, error) {
	wait := t.pace.wait(part, t.now())
	if wait <= 0 {
		return 0, nil
	}
	if why := t.fits(ctx, wait, budget); why != "" {
		return 0, &RateLimitedError{Wait: wait, WaitKnown: true, Reason: "paced, nothing sent: " + why}
	}
	return wait, t.sleep(ctx, wait)
}

// denial reads resp as a denial, or returns nil for a response that is
// none.
func denial(resp *http.Response, now time.Time) *RateLimitedError {
	wait, known := ParseRetryAfter(resp.Header, now)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
	case resp.StatusCode == http.StatusServiceUnavailable && known:
	default:
		return nil
	}
	e := &RateLimitedError{StatusCode: resp.StatusCode, Wait: wait, WaitKnown: known, Header: resp.Header}
	e.Limits, _ = ParseRateLimit(resp.Header)
	e.Policies, _ = ParseRateLimitPolicy(resp.Header)
	if !known {
		e.Wait, e.WaitKnown = exhausted(e.Limits)
	}
	return e
}

// exhausted is the longest t of the limits that are exhausted (r=0 with
// t) and not shadow; false when there are none.
func exhausted(limits []ServiceLimit) (time.Duration, bool) {
	var wait time.Duration
	found := false
	for _, l := range limits {
		if l.Remaining == 0 && l.HasReset && !l.Shadow {
			wait, found = max(wait, l.Reset), true
		}
	}
	return wait, found
}

// again is req to send once more, with a fresh body.
func again(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("sluicehttp: Transport: the request's GetBody: %w", err)
	}
	r := req.Clone(req.Context())
	r.Body = body
	return r, nil
}

// drain reads a little of a denial's body, so that its connection can be
// reused, and closes it.
func drain(body io.ReadCloser) {
	if body == nil { // a Base that breaks http.Response's promise
		return
	}
	_, _ = io.CopyN(io.Discard, body, 4<<10)
	_ = body.Close()
}

func (t *Transport) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func (t *Transport) sleep(ctx context.Context, d time.Duration) error {
	if t.Sleep != nil {
		return t.Sleep(ctx, d)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
