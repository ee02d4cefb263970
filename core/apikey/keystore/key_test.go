package keystore_test

import (
	"testing"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// TestHashVectors: SHA-256 in unpadded base64url, Better Auth's stored form.
func TestHashVectors(t *testing.T) {
	for in, want := range map[string]string{
		"test": "n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg",
		"abc":  "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0",
	} {
		if got := keystore.Hash(in); got != want {
			t.Errorf("Hash(%q) = %q, want %q", in, got, want)
		}
	}
}
