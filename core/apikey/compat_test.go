package apikey_test

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/core/apikey"
)

// TestDeprecatedNamesStillServe: code written against the names that moved
// to keystore and core/memory compiles and runs as before.
func TestDeprecatedNamesStillServe(t *testing.T) {
	ctx := context.Background()
	keys, err := apikey.NewStorageOnly(apikey.NewMemoryStore(nil))
	if err != nil {
		t.Fatal(err)
	}
	plaintext, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := keys.Verify(ctx, plaintext); err != nil || !res.Valid {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
	remaining := int64(0)
	k := &apikey.StoredKey{Key: "h", Enabled: true, Remaining: &remaining}
	var _ apikey.Rerollable = apikey.NewMemoryStore(nil)
	if res := apikey.ApplyClaim(k, nil, apikey.ClaimRequest{Now: 1, Cost: 1}); apikey.Code(res.Code) != apikey.CodeUsageExceeded {
		t.Fatalf("ApplyClaim on an empty quota = %q; want %q", res.Code, apikey.CodeUsageExceeded)
	}
}
