package apikey

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// TestOwnerLimits: the keys of one owner share the owner's named limits,
// spent together with each key's own budget: a denial on either side
// spends nothing on the other; in every mode alike.
func TestOwnerLimits(t *testing.T) {
	inEachMode(t, testOwnerLimits)
	ctx := context.Background()
	s := memory.NewStorage()
	m, err := NewStorageOnly(claimerOnly{s, s})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetOwnerLimits(ctx, "team-1", nil); !errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "keystore.OwnerSharing") {
		t.Fatalf("SetOwnerLimits on a storage without keystore.OwnerSharing: err = %v, want ErrUnsupported naming it", err)
	}
	if _, err := NewStorageOnly(s, WithStoragePrefix("app{")); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("a prefix with an open hash tag: err = %v, want ErrInvalid", err)
	}
	if _, err := NewStorageOnly(s, WithStoragePrefix("{app}:")); err != nil {
		t.Fatalf("a prefix with a whole hash tag: %v", err)
	}
}

// claimerOnly is a storage that claims but declares no optional capability.
type claimerOnly struct {
	driver.SecondaryStorage
	keystore.Claimer
}

func testOwnerLimits(t *testing.T, e *env) {
	ctx := context.Background()
	if err := e.m.SetOwnerLimits(ctx, "team-1", map[string]NamedLimit{"tokens": {Max: 100, Window: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	a, ka := e.create(t, CreateParams{ReferenceID: "team-1", Remaining: quota(2), RateLimit: noRateLimit()})
	b, kb := e.create(t, CreateParams{ReferenceID: "team-1", RateLimit: noRateLimit(),
		Limits: map[string]NamedLimit{"tokens": {Max: 30, Window: time.Hour}}})
	other, _ := e.create(t, CreateParams{ReferenceID: "team-2", RateLimit: noRateLimit()})
	tokens := func(n int64) VerifyOption { return LimitCost("tokens", n) }

	wantCode(t, e.verify(t, a, tokens(40)), "")
	wantCode(t, e.verify(t, b, tokens(30)), "")
	r := e.verify(t, b, tokens(1)) // the key's own 30 are spent
	if r.Code != CodeRateLimited || r.DeniedBy != "limit:tokens" {
		t.Fatalf("key b over its own limit: %+v, want RATE_LIMITED on its own tokens", r)
	}
	r = e.verify(t, a, tokens(31)) // 70 + 31 > 100
	if r.Code != CodeRateLimited || r.DeniedBy != "ownerLimit:tokens" {
		t.Fatalf("key a over the owner's limit: %+v, want RATE_LIMITED on the owner's tokens", r)
	}
	wantCode(t, e.verify(t, a, tokens(30)), "")
	wantCode(t, e.verify(t, a, tokens(0)), CodeUsageExceeded) // a's quota is spent: the owner's tokens are not
	wantCode(t, e.verify(t, other, tokens(500)), "")          // another owner's key: not limited
	got, err := e.m.OwnerLimits(ctx, "team-1")
	if err != nil {
		t.Fatal(err)
	}
	if got["tokens"].Count != 100 || got["tokens"].Max != 100 {
		t.Fatalf("owner tokens %+v, want 100 of 100", got["tokens"])
	}
	if remaining(t, e.get(t, ka.ID)) != 0 || e.get(t, kb.ID).Limits["tokens"].Count != 30 {
		t.Fatal("the keys' own budgets are not as spent")
	}
	// Replacing the owner's limits keeps the counter of one that stays.
	if err := e.m.SetOwnerLimits(ctx, "team-1", map[string]NamedLimit{"tokens": {Max: 130, Window: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.verify(t, b, LimitCost("images", 1)), "")
	if got, _ := e.m.OwnerLimits(ctx, "team-1"); got["tokens"].Count != 100 || got["tokens"].Max != 130 {
		t.Fatalf("after raising the max: %+v", got["tokens"])
	}
	// The window ends: the owner's counter opens a new one.
	e.clock.Advance(time.Hour)
	wantCode(t, e.verify(t, b, tokens(130)), CodeRateLimited) // b's own 30
	wantCode(t, e.verify(t, other, tokens(1)), "")
	if err := e.m.SetOwnerLimits(ctx, "team-1", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := e.m.OwnerLimits(ctx, "team-1"); err != nil || len(got) != 0 {
		t.Fatalf("after removing the owner's limits: %+v, %v", got, err)
	}
	wantCode(t, e.verify(t, b, tokens(30)), "")
	if err := e.m.SetOwnerLimits(ctx, "", nil); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("SetOwnerLimits without an owner: err = %v, want ErrInvalid", err)
	}
}
