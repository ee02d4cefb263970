package operator_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/operator"
)

// The API mounted under /operator/, with a bearer token: an operator
// creates a key, and a request without the token is refused.
func Example() {
	db, err := core.New(memory.New())
	if err != nil {
		log.Fatal(err)
	}
	rec := operator.NewRecorder()
	keys, err := apikey.New(db, apikey.WithObserver(rec.ObserveKeys))
	if err != nil {
		log.Fatal(err)
	}
	h, err := operator.New(operator.Config{Keys: keys, Authorize: operator.BearerToken("ops", "s3cret"), Recorder: rec})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/operator/", http.StripPrefix("/operator", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	post := func(token, body string) {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", srv.URL+"/operator/api-key/create", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, strings.Contains(string(b), `"key":"sk_`))
	}
	post("s3cret", `{"referenceId":"user-1","prefix":"sk_","remaining":100}`)
	post("", `{"referenceId":"user-1"}`)
	// Output:
	// 200 true
	// 401 false
}
