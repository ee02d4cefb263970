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

// The fields of the draft's example with two policies (its section 3 and
// appendix B.3.1), read.
func ExampleParseRateLimit() {
	h := http.Header{}
	h.Set("RateLimit-Policy", `"hour";q=1000;w=3600, "day";q=5000;w=86400`)
	h.Set("RateLimit", `"day";r=100;t=36000`)
	policies, err := sluicehttp.ParseRateLimitPolicy(h)
	fmt.Println(err)
	for _, p := range policies {
		fmt.Println(p.Name, p.Quota, "per", p.Window)
	}
	limits, err := sluicehttp.ParseRateLimit(h)
	fmt.Println(err, limits[0].Name, limits[0].Remaining, "left for", limits[0].Reset)
	_, err = sluicehttp.ParseRateLimit(http.Header{"Ratelimit": {`"day";r=-1`}})
	fmt.Println(err)
	// Output:
	// <nil>
	// hour 1000 per 1h0m0s
	// day 5000 per 24h0m0s
	// <nil> day 100 left for 10h0m0s
	// sluicehttp: malformed rate-limit field: RateLimit member 0: r must be an Integer ≥ 0
}
