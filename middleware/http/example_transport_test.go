package sluicehttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// A client whose Transport waits as the service asks, up to 30 seconds
// per request, and fails fast with the wait when asked for more. (Sleep
// here only prints, so that the example does not wait.)
func ExampleTransport() {
	answers := []string{"2", "", "3600"} // the service's Retry-After, "" for 200
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := answers[0]
		answers = answers[1:]
		if wait != "" {
			w.Header().Set("RateLimit-Policy", `"burst";q=100;w=60`)
			w.Header().Set("RateLimit", `"burst";r=0;t=`+wait)
			w.Header().Set("Retry-After", wait)
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()

	client := &http.Client{Transport: &sluicehttp.Transport{
		MaxWait: 30 * time.Second,
		Sleep: func(_ context.Context, d time.Duration) error {
			fmt.Println("waiting", d)
			return nil
		},
	}}
	resp, err := client.Get(srv.URL + "/items")
	if err == nil {
		fmt.Println("first:", resp.Status)
		resp.Body.Close()
	}
	_, err = client.Get(srv.URL + "/items")
	if rl, ok := errors.AsType[*sluicehttp.RateLimitedError](err); ok {
		fmt.Println("second:", rl.StatusCode, rl.Wait, rl.Reason, rl.Policies[0].Name, rl.Policies[0].Quota)
	}
	// Output:
	// waiting 2s
	// first: 200 OK
	// second: 429 1h0m0s over MaxWait (30s left) burst 100
}
