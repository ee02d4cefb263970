package sluicehttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

func byHost(r *http.Request) string { return r.URL.Host }

// A response saying a policy is exhausted holds the partition's next
// request until its t; a shadow member, or another partition, does not.
func TestTransportPaces(t *testing.T) {
	s := &script{answers: []*http.Response{
		answer(200, "RateLimit", `"burst";r=0;t=5, "new";r=0;t=50;sluice-shadow`),
		answer(200, "RateLimit", `"burst";r=9;t=60, "new";r=0;t=50;sluice-shadow`),
		answer(200), answer(200),
	}}
	ft := &fakeTime{now: t0}
	tr := newTransport(s, ft, time.Minute)
	tr.Partition = byHost
	for _, url := range []string{"http://a.example/1", "http://a.example/2", "http://b.example/", "http://a.example/3"} {
		req, _ := http.NewRequest("GET", url, nil)
		if resp, err := tr.RoundTrip(req); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v, %v", url, resp, err)
		}
	}
	if len(ft.slept) != 1 || ft.slept[0] != 5*time.Second || len(s.bodies) != 4 {
		t.Errorf("slept %v over %d sends; want [5s] before the second of four", ft.slept, len(s.bodies))
	}
}

// A pace over MaxWait fails fast without sending; a denial's Retry-After
// paces the partition too.
func TestTransportPaceFailsFast(t *testing.T) {
	s := &script{answers: []*http.Response{answer(429, "Retry-After", "90"), answer(200)}}
	ft := &fakeTime{now: t0}
	tr := newTransport(s, ft, time.Minute)
	tr.Partition = byHost
	for i := range 2 {
		_, err := get(t, tr, context.Background(), "")
		var rl *sluicehttp.RateLimitedError
		if !errors.As(err, &rl) || rl.Wait != 90*time.Second {
			t.Fatalf("request %d: %v", i, err)
		}
		if want := []int{429, 0}[i]; rl.StatusCode != want {
			t.Errorf("request %d: status %d, want %d (%s)", i, rl.StatusCode, want, rl.Reason)
		}
	}
	if len(s.bodies) != 1 || len(ft.slept) != 0 {
		t.Errorf("sent %d, slept %v; want one send and no wait", len(s.bodies), ft.slept)
	}
	ft.now = ft.now.Add(90 * time.Second)
	if resp, err := get(t, tr, context.Background(), ""); err != nil || resp.StatusCode != 200 {
		t.Errorf("after the wait: %v, %v", resp, err)
	}
}

// Many goroutines share one pacing Transport: under -race, its state is
// safe, and no request waits more than MaxWait.
func TestTransportPaceConcurrent(t *testing.T) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: hdr("RateLimit", `"p";r=0;t=1`), Body: io.NopCloser(strings.NewReader(""))}, nil
	})
	var mu sync.Mutex
	var slept []time.Duration
	tr := &sluicehttp.Transport{Base: base, MaxWait: time.Second, Partition: func(r *http.Request) string { return r.URL.Path },
		Now: func() time.Time { return t0 },
		Sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			slept = append(slept, d)
			return nil
		}}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", "http://a.example/"+string(rune('a'+i%4)), nil)
			if resp, err := tr.RoundTrip(req); err != nil || resp.StatusCode != 200 {
				t.Errorf("request %d: %v, %v", i, resp, err)
			}
		})
	}
	wg.Wait()
	for _, d := range slept {
		if d <= 0 || d > time.Second {
			t.Errorf("slept %v", d)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
