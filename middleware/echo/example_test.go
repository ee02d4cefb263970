package sluiceecho_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluiceecho "github.com/sluice-go/sluice/middleware/echo"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

func ExampleRateLimit() {
	limiter, err := ratelimit.New(ratelimit.Memory(10_000))
	if err != nil {
		panic(err)
	}
	limit, err := sluiceecho.RateLimit(sluicehttp.RateLimitConfig{
		Limiter: limiter,
		Default: ratelimit.Rule{Window: time.Minute, Max: 2},
		Paths:   map[string]ratelimit.Rule{"/health": ratelimit.Unlimited},
	})
	if err != nil {
		panic(err)
	}
	r := echo.New()
	r.Use(limit)
	r.GET("/hello", func(c echo.Context) error { return c.String(http.StatusOK, "hello") })

	for range 3 {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/hello", nil)
		r.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Header().Get("RateLimit-Remaining"), strings.TrimSpace(w.Body.String()))
	}
	// Output:
	// 200 1 hello
	// 200 0 hello
	// 429 0 {"code":"RATE_LIMITED","message":"Too many requests. Please try again later.","status":429,"retryAfter":60}
}

func ExampleAPIKey() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)
	plaintext, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42"})
	if err != nil {
		panic(err)
	}
	requireKey, err := sluiceecho.APIKey(sluicehttp.APIKeyConfig{Manager: keys})
	if err != nil {
		panic(err)
	}
	r := echo.New()
	r.GET("/me", func(c echo.Context) error {
		key, _ := sluiceecho.KeyFromContext(c)
		return c.String(http.StatusOK, "hello "+key.ReferenceID)
	}, requireKey)

	for _, k := range []string{plaintext, "", "sk_wrong"} {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/me", nil)
		if k != "" {
			req.Header.Set("x-api-key", k)
		}
		r.ServeHTTP(w, req)
		fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
	}
	// Output:
	// 200 hello user-42
	// 401 {"code":"MISSING_API_KEY","message":"missing API key in header x-api-key","status":401}
	// 401 {"code":"INVALID_API_KEY","message":"invalid API key","status":401}
}
