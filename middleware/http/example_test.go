package sluicehttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-go/sluice/core/ratelimit"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

func ExampleRateLimit() {
	limiter, _ := ratelimit.New(ratelimit.Memory(100000))
	mw, err := sluicehttp.RateLimit(sluicehttp.RateLimitConfig{
		Limiter: limiter,
		Default: ratelimit.Rule{Window: time.Minute, Max: 100},
		Paths: map[string]ratelimit.Rule{
			"/sign-in/*": {Window: 10 * time.Second, Max: 1},
			"/health":    ratelimit.Unlimited,
		},
	})
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
	for i := 0; i < 2; i++ {
		r := httptest.NewRequest("POST", "/sign-in/email", nil)
		r.RemoteAddr = "203.0.113.7:50000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d remaining=%s retry-after=%q %s", w.Code, w.Header().Get("RateLimit-Remaining"), w.Header().Get("Retry-After"), w.Body)
	}
	// Output:
	// 200 remaining=0 retry-after="" ok
	// 429 remaining=0 retry-after="10" {"code":"RATE_LIMITED","message":"Too many requests. Please try again later.","status":429,"retryAfter":10}
}

func ExampleClientKey() {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "[2001:db8:1:2:3:4:5:6]:443"
	fmt.Println(sluicehttp.ClientKey(r, nil))
	// Output:
	// 2001:db8:1:2::/64
}
