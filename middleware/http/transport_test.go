package sluicehttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// script is a RoundTripper answering from a list of responses, one per
// request, recording the bodies it was sent.
type script struct {
	answers []*http.Response
	bodies  []string
}

func (s *script) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		_ = r.Body.Close()
		s.bodies = append(s.bodies, string(b))
	} else {
		s.bodies = append(s.bodies, "")
	}
	if len(s.answers) == 0 {
		return nil, errors.New("script: no more answers")
	}
	resp := s.answers[0]
	s.answers = s.answers[1:]
	resp.Request = r
	return resp, nil
}

func answer(status int, kv ...string) *http.Response {
	return &http.Response{StatusCode: status, Header: hdr(kv...), Body: io.NopCloser(strings.NewReader("body"))}
}

// fakeTime is a clock that Sleep advances, so that no test sleeps.
type fakeTime struct {
	now    time.Time
	slept  []time.Duration
	cancel context.CancelFunc // when set, Sleep cancels instead of waiting
}

func (f *fakeTime) Now() time.Time { return f.now }

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	if f.cancel != nil {
		f.cancel()
		return ctx.Err()
	}
	f.slept = append(f.slept, d)
	f.now = f.now.Add(d)
	return nil
}

func newTransport(s *script, ft *fakeTime, maxWait time.Duration) *sluicehttp.Transport {
	return &sluicehttp.Transport{Base: s, MaxWait: maxWait, Sleep: ft.Sleep, Now: ft.Now}
}

func get(t *testing.T, rt http.RoundTripper, ctx context.Context, body string) (*http.Response, error) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://api.example/items/123", r)
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

func TestTransportWaitsAndRetries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first *http.Response
		wait  time.Duration
	}{
		{"Retry-After seconds", answer(429, "Retry-After", "20", "RateLimit", `"dynamic";r=15;t=40`), 20 * time.Second},
		{"Retry-After date", answer(429, "Retry-After", "Mon, 05 Aug 2019 09:27:05 GMT", "Date", "Mon, 05 Aug 2019 09:27:00 GMT",
			"RateLimit", `"default";r=0;t=5`), 5 * time.Second},
		{"503 Retry-After", answer(503, "Retry-After", "3"), 3 * time.Second},
		// Without Retry-After, the longest t of the exhausted policies; a shadow one does not count.
		{"RateLimit r=0", answer(429, "RateLimit", `"burst";r=0;t=7, "daily";r=0;t=9, "wide";r=3;t=50, "new";r=0;t=30;sluice-shadow`), 9 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{answers: []*http.Response{tc.first, answer(200)}}
			ft := &fakeTime{now: t0}
			resp, err := get(t, newTransport(s, ft, time.Minute), context.Background(), "payload")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("got %v, %v", resp, err)
			}
			if len(ft.slept) != 1 || ft.slept[0] != tc.wait {
				t.Errorf("slept %v, want [%v]", ft.slept, tc.wait)
			}
			if len(s.bodies) != 2 || s.bodies[0] != "payload" || s.bodies[1] != "payload" {
				t.Errorf("bodies sent %q, want the payload twice", s.bodies)
			}
		})
	}
}

func TestTransportFailsFast(t *testing.T) {
	ctx5s, cancel := context.WithDeadline(context.Background(), t0.Add(5*time.Second))
	defer cancel()
	for _, tc := range []struct {
		name    string
		answers []*http.Response
		maxWait time.Duration
		ctx     context.Context
		body    io.Reader
		reason  string
		wait    time.Duration
		sends   int
	}{
		{"zero MaxWait", []*http.Response{answer(429, "Retry-After", "1")}, 0, nil, nil, "over MaxWait", time.Second, 1},
		// The zero Transport's doc: a denial asking for no wait is sent again at once, at most DefaultMaxRetries times.
		{"zero MaxWait, no wait asked", []*http.Response{answer(429, "Retry-After", "0"), answer(429, "Retry-After", "0"),
			answer(429, "Retry-After", "0"), answer(429, "Retry-After", "0")}, 0, nil, nil, "retries exhausted", 0, sluicehttp.DefaultMaxRetries + 1},
		{"over MaxWait", []*http.Response{answer(429, "Retry-After", "61")}, time.Minute, nil, nil, "over MaxWait", 61 * time.Second, 1},
		{"hostile wait", []*http.Response{answer(429, "Retry-After", "99999999999999999999")}, time.Minute, nil, nil, "over MaxWait", 1<<63 - 1, 1},
		{"MaxWait in all", []*http.Response{answer(429, "Retry-After", "40"), answer(429, "Retry-After", "40")}, time.Minute, nil, nil,
			"over MaxWait", 40 * time.Second, 2},
		{"no wait given", []*http.Response{answer(429)}, time.Minute, nil, nil, "no wait", 0, 1},
		{"malformed fields", []*http.Response{answer(429, "RateLimit", `"a";r=0;t=x`, "Retry-After", "soon")}, time.Minute, nil, nil, "no wait", 0, 1},
		{"past the deadline", []*http.Response{answer(429, "Retry-After", "5")}, time.Minute, ctx5s, nil, "past the deadline", 5 * time.Second, 1},
		{"retries exhausted", []*http.Response{answer(429, "Retry-After", "0"), answer(429, "Retry-After", "0"),
			answer(429, "Retry-After", "0"), answer(429, "Retry-After", "0")}, time.Minute, nil, nil, "retries exhausted", 0, 4},
		{"body not replayable", []*http.Response{answer(429, "Retry-After", "1")}, time.Minute, nil, io.MultiReader(strings.NewReader("x")),
			"body not replayable", time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{answers: tc.answers}
			ft := &fakeTime{now: t0}
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			req, _ := http.NewRequestWithContext(ctx, "PUT", "http://api.example/", tc.body)
			resp, err := newTransport(s, ft, tc.maxWait).RoundTrip(req)
			var rl *sluicehttp.RateLimitedError
			if resp != nil || !errors.As(err, &rl) {
				t.Fatalf("got %v, %v; want a *RateLimitedError", resp, err)
			}
			if !strings.HasPrefix(rl.Reason, tc.reason) || rl.Wait != tc.wait || rl.StatusCode != 429 {
				t.Errorf("got %+v; want reason %q, wait %v", rl, tc.reason, tc.wait)
			}
			var total time.Duration
			for _, d := range ft.slept {
				total += d
			}
			if len(s.bodies) != tc.sends || total > tc.maxWait {
				t.Errorf("sent %d times, slept %v (MaxWait %v); want %d sends", len(s.bodies), ft.slept, tc.maxWait, tc.sends)
			}
		})
	}
}

func TestTransportPassesOtherResponses(t *testing.T) {
	for _, status := range []int{200, 400, 500, 503} {
		s := &script{answers: []*http.Response{answer(status, "RateLimit", `"default";r=0;t=50`)}}
		resp, err := get(t, newTransport(s, &fakeTime{now: t0}, time.Minute), context.Background(), "")
		if err != nil || resp.StatusCode != status || len(s.bodies) != 1 {
			t.Errorf("%d: got %v, %v after %d sends", status, resp, err, len(s.bodies))
		}
	}
}

func TestTransportContextCancelledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &script{answers: []*http.Response{answer(429, "Retry-After", "5")}}
	ft := &fakeTime{now: t0, cancel: cancel}
	resp, err := get(t, newTransport(s, ft, time.Minute), ctx, "")
	if resp != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, %v; want context.Canceled", resp, err)
	}
}

// checkTransportBound sends one request through a Transport (MaxWait 10s)
// whose every answer is a 429 with h's fields: it never waits more than
// 10s in all, and ends with a *RateLimitedError.
func checkTransportBound(t *testing.T, h http.Header) {
	s := &script{}
	for range sluicehttp.DefaultMaxRetries + 1 {
		s.answers = append(s.answers, &http.Response{StatusCode: 429, Header: h, Body: http.NoBody})
	}
	ft := &fakeTime{now: t0}
	req, _ := http.NewRequest("GET", "http://api.example/", nil)
	_, err := newTransport(s, ft, 10*time.Second).RoundTrip(req)
	var total time.Duration
	for _, d := range ft.slept {
		if d < 0 {
			t.Fatalf("slept %v", d)
		}
		total += d
	}
	var rl *sluicehttp.RateLimitedError
	if total > 10*time.Second || !errors.As(err, &rl) {
		t.Fatalf("slept %v in all (MaxWait 10s), error %v", ft.slept, err)
	}
}

// A Base whose denial has no Body (http.Response promises one) does not
// make the transport panic.
func TestTransportDenialWithoutBody(t *testing.T) {
	s := &script{answers: []*http.Response{{StatusCode: 429, Header: hdr("Retry-After", "1")}, answer(200)}}
	resp, err := get(t, newTransport(s, &fakeTime{now: t0}, time.Minute), context.Background(), "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v, %v", resp, err)
	}
}
