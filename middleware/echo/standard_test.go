package sluiceecho_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluiceecho "github.com/sluice-go/sluice/middleware/echo"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// echo serves the draft's fields and the problem details body as
// sluicehttp does, and sluicehttp's Transport reads them: a client that
// fails fast learns the wait, the policy and the rule that denied.
func TestStandardResponses(t *testing.T) {
	clk := newClock()
	limiter, _ := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(clk.Now))
	limit, err := sluiceecho.RateLimit(sluicehttp.RateLimitConfig{Limiter: limiter, Headers: sluicehttp.HeadersIETF, ProblemDetails: true,
		Default: ratelimit.Rule{Name: "burst", Window: time.Minute, Max: 1}})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.Use(limit)
	e.GET("/a", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	srv := httptest.NewServer(e)
	defer srv.Close()

	raw, err := http.Get(srv.URL + "/a")
	if err != nil {
		t.Fatal(err)
	}
	raw.Body.Close()
	if raw.StatusCode != 204 || raw.Header.Get("RateLimit-Policy") != `"burst";q=1;w=60` || raw.Header.Get("RateLimit") != `"burst";r=0;t=60` {
		t.Fatalf("allowed: %d %v", raw.StatusCode, raw.Header)
	}
	clk.Advance(20 * time.Second)
	raw, err = http.Get(srv.URL + "/a")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(raw.Body)
	raw.Body.Close()
	var p sluicehttp.Problem
	if err := json.Unmarshal(body, &p); err != nil || raw.StatusCode != 429 || raw.Header.Get("Content-Type") != "application/problem+json" ||
		p.Type != sluicehttp.QuotaExceededType || len(p.ViolatedPolicies) != 1 || p.ViolatedPolicies[0] != "burst" {
		t.Fatalf("denied: %d %v %s", raw.StatusCode, raw.Header, body)
	}
	client := &http.Client{Transport: &sluicehttp.Transport{}}
	_, err = client.Get(srv.URL + "/a")
	var rl *sluicehttp.RateLimitedError
	if !errors.As(err, &rl) || rl.Wait != 40*time.Second || len(rl.Policies) != 1 || rl.Policies[0].Name != "burst" || rl.Limits[0].Reset != 40*time.Second {
		t.Fatalf("client: %v (%+v)", err, rl)
	}
}
