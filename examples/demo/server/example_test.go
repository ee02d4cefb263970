package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/sluice-go/sluice/examples/demo/server"
)

// A burst of 20 concurrent requests at /hello, limited to 5 per 10 s per
// client IP: exactly 5 get through, whatever the interleaving.
func ExampleBurst() {
	srv, err := server.New(context.Background(), server.Config{ORM: server.ORMBun}) // SQLite in a temporary directory
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	res, err := server.Burst(context.Background(), server.BurstConfig{URL: ts.URL + "/hello", N: 20})
	fmt.Println(res, err)
	// Output:
	// admitted 5 of 20 (limit 5), 15 denied with 429, 0 failed <nil>
}
