package keystore_test

import (
	"fmt"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// A storage written in Go decides a claim with Apply, inside whatever makes
// its read and write one atomic step (a lock, a transaction, a
// compare-and-set loop), and writes the key back when it changed.
func ExampleApply() {
	remaining, now := int64(1), int64(1_700_000_000_000)
	stored := &keystore.Key{ID: 7, Key: "hash", Enabled: true, Remaining: &remaining}

	first := keystore.Apply(stored, nil, keystore.Request{Now: now, Cost: 1, Hash: "hash"})
	second := keystore.Apply(stored, nil, keystore.Request{Now: now + 1, Cost: 1, Hash: "hash"})
	fmt.Printf("first: found %v, code %q, remaining %d\n", first.Found, first.Code, *first.Key.Remaining)
	fmt.Printf("second: code %q\n", second.Code)
	// Output:
	// first: found true, code "", remaining 0
	// second: code "USAGE_EXCEEDED"
}
