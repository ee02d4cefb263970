package apikey

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestDeniedBy: a denial says which limit denied it: the key's rate limit
// (the default one, 10 per 24 hours, for a key created without one), its
// quota, its named limit, or its owner's; other answers name none. In
// database, cached and storage-only mode alike.
func TestDeniedBy(t *testing.T) { inEachMode(t, testDeniedBy) }

func testDeniedBy(t *testing.T, e *env) {
	ctx := context.Background()
	want := func(what string, r Result, code Code, by string, wait time.Duration) {
		t.Helper()
		if r.Code != code || r.DeniedBy != by || r.TryAgainIn != wait {
			t.Fatalf("%s: code %q, denied by %q, try again in %v; want %q, %q, %v", what, r.Code, r.DeniedBy, r.TryAgainIn, code, by, wait)
		}
	}

	plain, k := e.create(t, CreateParams{ReferenceID: "default"})
	if k.RateLimit != (RateLimit{Enabled: true, Window: 24 * time.Hour, Max: 10}) {
		t.Fatalf("a key created without RateLimit has %+v; want the default, 10 per 24 hours", k.RateLimit)
	}
	for i := range 10 {
		want(fmt.Sprint("default rate limit, verification ", i+1), e.verify(t, plain), "", "", 0)
	}
	want("default rate limit, 11th verification", e.verify(t, plain), CodeRateLimited, "rateLimit", 24*time.Hour)

	plain, _ = e.create(t, CreateParams{ReferenceID: "quota", Remaining: quota(1), RateLimit: noRateLimit()})
	want("quota", e.verify(t, plain), "", "", 0)
	want("quota spent", e.verify(t, plain), CodeUsageExceeded, "remaining", 0)

	plain, _ = e.create(t, CreateParams{ReferenceID: "named", RateLimit: noRateLimit(),
		Limits: map[string]NamedLimit{"tokens": {Max: 5, Window: time.Hour}}})
	want("named limit", e.verify(t, plain, LimitCost("tokens", 6)), CodeRateLimited, "limit:tokens", time.Hour)

	if err := e.m.SetOwnerLimits(ctx, "owner", map[string]NamedLimit{"tokens": {Max: 5, Window: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	plain, _ = e.create(t, CreateParams{ReferenceID: "owner", RateLimit: noRateLimit()})
	want("owner's limit", e.verify(t, plain, LimitCost("tokens", 6)), CodeRateLimited, "ownerLimit:tokens", time.Minute)

	plain, _ = e.create(t, CreateParams{ReferenceID: "disabled", Disabled: true})
	want("disabled", e.verify(t, plain), CodeDisabled, "", 0)
	want("unknown", e.verify(t, "nope"), CodeInvalid, "", 0)
}
