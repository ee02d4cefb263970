package sluicepgx_test

import (
	"io"
	"os"
	"testing"
)

// TestExamplesRun runs the examples on the configured PostgreSQL and checks
// what they print, as an Output comment would where a server is certain.
func TestExamplesRun(t *testing.T) {
	// adaptertest.PostgresDSN's rule, spelled out because this module does
	// not require adaptertest (the suites that do are in pgxtest): skip
	// without a server, fail in CI.
	if os.Getenv("SLUICE_POSTGRES_DSN") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL is required in CI: set SLUICE_POSTGRES_DSN")
		}
		t.Skip("PostgreSQL not configured: set SLUICE_POSTGRES_DSN to run this test")
	}
	for _, tc := range []struct {
		name string
		run  func()
		want string
	}{
		{"Example", Example, "true 1 0s <nil>\ntrue 0 0s <nil>\nfalse 0 1m0s <nil>\n"},
		{"Example_transaction", Example_transaction, "in the transaction: 1 <nil>\nafter the rollback: 0 <nil>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := captureStdout(t, tc.run); got != tc.want {
				t.Errorf("printed\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	func() {
		defer func() { os.Stdout = old }()
		fn()
	}()
	_ = w.Close()
	return <-done
}
