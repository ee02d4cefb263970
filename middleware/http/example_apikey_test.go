package sluicehttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/memory"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

func ExampleAPIKey() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)
	plaintext, _, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42", Name: "ci"})

	mw, err := sluicehttp.APIKey(sluicehttp.APIKeyConfig{Manager: keys})
	if err != nil {
		panic(err)
	}
	api := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _ := sluicehttp.KeyFromContext(r.Context())
		fmt.Fprintf(w, "hello %s (key %q)", key.ReferenceID, key.Name)
	}))
	for _, k := range []string{plaintext, "wrong"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("x-api-key", k)
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Body.String())
	}
	// Output:
	// 200 hello user-42 (key "ci")
	// 401 {"code":"INVALID_API_KEY","message":"invalid API key","status":401}
}

// Verify takes the manager's own options: here every request must hold
// files:write and spends 2 units of the key's quota.
func ExampleAPIKeyConfig_verify() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)
	writer, _, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "u", Remaining: new(int64(5)),
		Permissions: map[string][]string{"files": {"read", "write"}}})
	reader, _, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "u", Permissions: map[string][]string{"files": {"read"}}})

	mw, err := sluicehttp.APIKey(sluicehttp.APIKeyConfig{
		Manager: keys,
		Verify:  []apikey.VerifyOption{apikey.Permissions(map[string][]string{"files": {"write"}}), apikey.Cost(2)},
	})
	if err != nil {
		panic(err)
	}
	upload := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _ := sluicehttp.KeyFromContext(r.Context())
		fmt.Fprintf(w, "stored; %d left", *key.Remaining)
	}))
	for _, k := range []string{writer, reader} {
		req := httptest.NewRequest(http.MethodPost, "/files", nil)
		req.Header.Set(sluicehttp.DefaultHeader, k)
		rec := httptest.NewRecorder()
		upload.ServeHTTP(rec, req)
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// 200 stored; 3 left
	// 403 {"code":"INSUFFICIENT_PERMISSIONS","message":"API key lacks a required permission","status":403}
}

// With HeadersIETF and ProblemDetails a key's 429 carries the draft's
// fields, its window the policy "rate-limit", and an RFC 9457 body.
func ExampleAPIKeyConfig_headers() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)
	key, _, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "u",
		RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 1}})

	mw, err := sluicehttp.APIKey(sluicehttp.APIKeyConfig{Manager: keys, Headers: sluicehttp.HeadersIETF, ProblemDetails: true})
	if err != nil {
		panic(err)
	}
	api := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	for range 2 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set(sluicehttp.DefaultHeader, key)
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
		if rec.Code == http.StatusTooManyRequests {
			fmt.Println(rec.Header().Get("RateLimit-Policy"), "|", rec.Header().Get("RateLimit"), "| Retry-After", rec.Header().Get("Retry-After"))
		}
	}
	// Output:
	// 200 ok
	// 429 {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"Too many requests. Please try again in 60 seconds.","violated-policies":["rate-limit"],"code":"RATE_LIMITED","retryAfter":60}
	// "rate-limit";q=1;w=60 | "rate-limit";r=0;t=60 | Retry-After 60
}
