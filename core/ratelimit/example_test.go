package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

func Example() {
	db, _ := core.New(memory.New()) // your ORM's adapter in production
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	limiter, _ := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(func() time.Time { return now }))
	rule := ratelimit.Rule{Window: time.Minute, Max: 2}
	for i := 0; i < 3; i++ {
		d, err := limiter.Consume(context.Background(), "user:42", rule)
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter, err)
	}
	// Output:
	// true 1 0s <nil>
	// true 0 0s <nil>
	// false 0 1m0s <nil>
}

func ExampleLimiter_ConsumeN() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	limiter, _ := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(func() time.Time { return now }))
	rule := ratelimit.Rule{Window: time.Hour, Max: 100}
	ctx := context.Background()
	d, _ := limiter.ConsumeN(ctx, "export:acme", rule, 60) // an expensive request
	fmt.Println(d.Allowed, d.Remaining)
	d, _ = limiter.ConsumeN(ctx, "export:acme", rule, 60)
	fmt.Println(d.Allowed, d.Remaining)
	d, _ = limiter.Check(ctx, "export:acme", rule) // cost 0: look without spending
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// true 40
	// false 40
	// true 40
}

func ExampleSecondary() {
	store := memory.NewStorage() // adapters/redis in production
	limiter, _ := ratelimit.New(ratelimit.Secondary(store))
	d, _ := limiter.Consume(context.Background(), "ip:203.0.113.7", ratelimit.Rule{Window: time.Second, Max: 5})
	fmt.Println(d.Allowed, d.Limit, d.Remaining)
	// Output:
	// true 5 4
}

func ExampleMiddleware() {
	limiter, _ := ratelimit.New(ratelimit.Memory(100000))
	mw, err := ratelimit.Middleware(ratelimit.HTTPConfig{
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
	fmt.Println(ratelimit.ClientKey(r, nil))
	// Output:
	// 2001:db8:1:2::/64
}
