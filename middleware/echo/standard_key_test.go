package sluiceecho_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/memory"
	sluiceecho "github.com/sluice-go/sluice/middleware/echo"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// The API-key middleware takes sluicehttp.APIKeyConfig, Headers and
// ProblemDetails included: a key's 429 carries the draft's fields, its
// window the policy "rate-limit", which sluicehttp's Transport reads.
func TestStandardKeyResponses(t *testing.T) {
	clk := newClock()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db, apikey.WithClock(clk.Now))
	key, _, err := keys.Create(context.Background(), apikey.CreateParams{ReferenceID: "u",
		RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 1}})
	if err != nil {
		t.Fatal(err)
	}
	verify, err := sluiceecho.APIKey(sluicehttp.APIKeyConfig{Manager: keys, Headers: sluicehttp.HeadersIETF, ProblemDetails: true})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.Use(verify)
	e.GET("/a", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	srv := httptest.NewServer(e)
	defer srv.Close()

	client := &http.Client{Transport: &sluicehttp.Transport{}}
	send := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/a", nil)
		req.Header.Set(sluicehttp.DefaultHeader, key)
		return client.Do(req)
	}
	resp, err := send()
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("first request: %v %v", resp, err)
	}
	resp.Body.Close()
	clk.Advance(20 * time.Second)
	_, err = send()
	var rl *sluicehttp.RateLimitedError
	if !errors.As(err, &rl) || rl.Wait != 40*time.Second || len(rl.Policies) != 1 || rl.Policies[0].Name != "rate-limit" ||
		rl.Policies[0].Quota != 1 || rl.Policies[0].Window != time.Minute || rl.Limits[0].Reset != 40*time.Second {
		t.Fatalf("the key's 429 as the client reads it: %v (%+v)", err, rl)
	}
}
