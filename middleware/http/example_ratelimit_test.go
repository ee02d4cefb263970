package sluicehttp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/sluice-go/sluice/core/ratelimit"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// Key counts each API key apart, wherever its requests come from; a
// request without one is refused (500) rather than let through.
func ExampleRateLimitConfig_key() {
	limiter, _ := ratelimit.New(ratelimit.Memory(1000))
	mw, err := sluicehttp.RateLimit(sluicehttp.RateLimitConfig{
		Limiter: limiter,
		Default: ratelimit.Rule{Window: time.Minute, Max: 1},
		Key: func(r *http.Request) (string, error) {
			k := r.Header.Get("X-API-Key")
			if k == "" {
				return "", errors.New("no API key") // in real code, authenticate first
			}
			return "apikey:" + k, nil
		},
	})
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, k := range []string{"alpha", "alpha", "beta", ""} {
		r := httptest.NewRequest("GET", "/any/path", nil)
		r.Header.Set("X-API-Key", k)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%q %d\n", k, w.Code)
	}
	// Output:
	// "alpha" 200
	// "alpha" 429
	// "beta" 200
	// "" 500
}

// A Key built from the client's address and the ServeMux pattern (Go
// 1.22+) counts /users/1 and /users/2 as one route. The middleware wraps
// the handlers registered on the mux, where r.Pattern is set.
func ExampleRateLimitConfig_ClientKey() {
	limiter, _ := ratelimit.New(ratelimit.Memory(1000))
	cfg := sluicehttp.RateLimitConfig{
		Limiter:        limiter,
		Default:        ratelimit.Rule{Window: time.Minute, Max: 1},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		ClientIPHeader: "X-Real-IP",
	}
	cfg.Key = func(r *http.Request) (string, error) { return cfg.ClientKey(r) + " " + r.Pattern, nil }
	mw, err := sluicehttp.RateLimit(cfg)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /users/{id}", mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	for _, p := range []string{"/users/1", "/users/2"} {
		r := httptest.NewRequest("GET", p, nil)
		r.RemoteAddr = "10.0.0.5:40000" // the proxy
		r.Header.Set("X-Real-IP", "203.0.113.7")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(p, w.Code, cfg.ClientKey(r))
	}
	// Output:
	// /users/1 200 203.0.113.7
	// /users/2 429 203.0.113.7
}

func ExampleHeaderStyle() {
	for _, style := range []sluicehttp.HeaderStyle{sluicehttp.HeadersDefault, sluicehttp.HeadersIETF, sluicehttp.HeadersNone} {
		limiter, _ := ratelimit.New(ratelimit.Memory(1000))
		mw, err := sluicehttp.RateLimit(sluicehttp.RateLimitConfig{
			Limiter: limiter,
			Default: ratelimit.Rule{Window: time.Minute, Max: 100},
			Headers: style,
		})
		if err != nil {
			panic(err)
		}
		w := httptest.NewRecorder()
		mw(http.NotFoundHandler()).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		fmt.Printf("%s: limit=%q remaining=%q ratelimit-policy=%q\n", style,
			w.Header().Get("RateLimit-Limit"), w.Header().Get("RateLimit-Remaining"), w.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// Default: limit="100" remaining="99" ratelimit-policy=""
	// IETF: limit="" remaining="" ratelimit-policy="\"default\";q=100;w=60"
	// None: limit="" remaining="" ratelimit-policy=""
}

func ExampleParseRules() {
	paths, err := sluicehttp.ParseRules(map[string]string{"/sign-in/*": "3/10s", "/api/*": "100-M", "/health": "unlimited"})
	fmt.Println(paths["/sign-in/*"], paths["/api/*"], paths["/health"] == ratelimit.Unlimited, err)
	_, err = sluicehttp.ParseRules(map[string]string{"/x": "lots"})
	fmt.Println(err)
	// Output:
	// 3/10s 100-M true <nil>
	// sluicehttp: invalid request: ParseRules: ["/x"]: rule "lots": want a count and a window, such as "100-M" or "5/30s"
}

// With HeadersIETF and ProblemDetails, a denial carries the draft's fields
// for its rule, named by the rule's Name, and an RFC 9457 body naming the
// rule that denied.
func ExampleRateLimitConfig_problemDetails() {
	limiter, _ := ratelimit.New(ratelimit.Memory(1000))
	mw, err := sluicehttp.RateLimit(sluicehttp.RateLimitConfig{
		Limiter:        limiter,
		Default:        ratelimit.Rule{Name: "burst", Window: time.Minute, Max: 1},
		Headers:        sluicehttp.HeadersIETF,
		ProblemDetails: true,
	})
	if err != nil {
		panic(err)
	}
	h := mw(http.NotFoundHandler())
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	fmt.Println(w.Code, w.Header().Get("Content-Type"))
	fmt.Println("RateLimit-Policy:", w.Header().Get("RateLimit-Policy"))
	var p sluicehttp.Problem
	_ = json.Unmarshal(w.Body.Bytes(), &p)
	fmt.Println(p.Type, p.ViolatedPolicies)
	// Output:
	// 429 application/problem+json
	// RateLimit-Policy: "burst";q=1;w=60
	// https://iana.org/assignments/http-problem-types#quota-exceeded [burst]
}

// A policy of two named rules on one path: both are decided together, and
// HeadersIETF reports each of them.
func ExampleRateLimitConfig_policies() {
	limiter, _ := ratelimit.New(ratelimit.Memory(1000))
	mw, err := sluicehttp.RateLimit(sluicehttp.RateLimitConfig{
		Limiter: limiter,
		Default: ratelimit.Unlimited,
		Policies: map[string]ratelimit.Policy{"/api/*": {
			{Name: "burst", Window: time.Minute, Max: 100},
			{Name: "daily", Window: 24 * time.Hour, Max: 1000},
		}},
		Headers: sluicehttp.HeadersIETF,
	})
	if err != nil {
		panic(err)
	}
	w := httptest.NewRecorder()
	mw(http.NotFoundHandler()).ServeHTTP(w, httptest.NewRequest("GET", "/api/items", nil))
	fmt.Println("RateLimit-Policy:", w.Header().Get("RateLimit-Policy"))
	fmt.Println("RateLimit:", w.Header().Get("RateLimit"))
	// Output:
	// RateLimit-Policy: "burst";q=100;w=60, "daily";q=1000;w=86400
	// RateLimit: "burst";r=99;t=60, "daily";r=999;t=86400
}
