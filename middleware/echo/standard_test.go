package sluiceecho_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluiceecho "github.com/sluice-go/sluice/middleware/echo"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// echo serves the draft's fields for every rule, and a client on
// sluicehttp.Transport backs off as they say: its wait (which moves the
// server's clock) ends the window, and the retry is admitted.
func TestStandardResponsesWithTransport(t *testing.T) {
	clk := newClock()
	limiter, _ := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(clk.Now))
	limit, err := sluiceecho.RateLimit(sluicehttp.RateLimitConfig{Limiter: limiter, Headers: sluicehttp.HeadersIETF,
		Default: ratelimit.Rule{Name: "burst", Window: 10 * time.Second, Max: 1}})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.Use(limit)
	e.GET("/a", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	srv := httptest.NewServer(e)
	defer srv.Close()

	var waits []time.Duration
	client := &http.Client{Transport: &sluicehttp.Transport{MaxWait: time.Minute, Now: clk.Now,
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); clk.Advance(d); return nil }}}
	for i := range 2 {
		resp, err := client.Get(srv.URL + "/a")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		limits, err := sluicehttp.ParseRateLimit(resp.Header)
		if resp.StatusCode != 204 || err != nil || len(limits) != 1 || limits[0].Name != "burst" || limits[0].Remaining != 0 {
			t.Fatalf("request %d: %d %v (%+v, %v)", i, resp.StatusCode, resp.Header, limits, err)
		}
		clk.Advance(3 * time.Second)
	}
	if len(waits) != 1 || waits[0] != 7*time.Second {
		t.Errorf("waited %v, want [7s]: the second request's Retry-After", waits)
	}
}
