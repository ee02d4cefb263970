package apikey_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/memory"
)

func Example() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)

	quota := int64(2)
	plaintext, key, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42", Prefix: "sk_", Remaining: &quota})
	if err != nil {
		panic(err)
	}
	fmt.Println("shown once:", len(plaintext), "characters; display form:", key.Start[:3]+"…")
	_ = plaintext // hand it to the user; only its hash is stored

	for range 3 {
		res, err := keys.Verify(ctx, plaintext)
		if err != nil {
			panic(err)
		}
		if res.Valid {
			fmt.Println("valid, remaining", *res.Key.Remaining)
		} else {
			fmt.Println("denied:", res.Code, res.Status)
		}
	}
	// Output:
	// shown once: 67 characters; display form: sk_…
	// valid, remaining 1
	// valid, remaining 0
	// denied: USAGE_EXCEEDED 429
}

// A key created without RateLimit has the default rate limit, 10
// verifications per 24 hours, whatever its quota: the eleventh of the day
// is denied by the rate limit, not the quota. &apikey.RateLimit{} turns it
// off.
func ExampleManager_Create() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)

	quota := int64(1000)
	plaintext, key, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42", Remaining: &quota})
	fmt.Printf("rate limit: %d per %v\n", key.RateLimit.Max, key.RateLimit.Window)
	for range 10 {
		keys.Verify(ctx, plaintext)
	}
	res, _ := keys.Verify(ctx, plaintext)
	fmt.Println("11th:", res.Code, "denied by", res.DeniedBy, "with", *res.Key.Remaining, "of the quota left")

	unlimited, _, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42", Remaining: &quota, RateLimit: &apikey.RateLimit{}})
	for range 10 {
		keys.Verify(ctx, unlimited)
	}
	res, _ = keys.Verify(ctx, unlimited)
	fmt.Println("without a rate limit, 11th:", res.Valid, *res.Key.Remaining, "left")
	// Output:
	// rate limit: 10 per 24h0m0s
	// 11th: RATE_LIMITED denied by rateLimit with 990 of the quota left
	// without a rate limit, 11th: true 989 left
}

func ExampleManager_Verify_rateLimit() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db, apikey.WithClock(func() time.Time { return now }))
	plaintext, _, _ := keys.Create(ctx, apikey.CreateParams{
		ReferenceID: "user-42",
		RateLimit:   &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 2},
	})
	for range 3 {
		res, _ := keys.Verify(ctx, plaintext)
		fmt.Printf("valid=%v code=%q tryAgainIn=%v\n", res.Valid, res.Code, res.TryAgainIn)
		now = now.Add(10 * time.Second)
	}
	// Output:
	// valid=true code="" tryAgainIn=0s
	// valid=true code="" tryAgainIn=0s
	// valid=false code="RATE_LIMITED" tryAgainIn=40s
}

func ExampleNewStorageOnly() {
	ctx := context.Background()
	store := memory.NewStorage() // a keystore.Claimer: keys live in process
	keys, err := apikey.NewStorageOnly(store)
	if err != nil {
		panic(err)
	}
	quota := int64(1)
	plaintext, _, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42", Remaining: &quota})
	for range 2 {
		res, _ := keys.Verify(ctx, plaintext)
		fmt.Printf("valid=%v code=%q\n", res.Valid, res.Code)
	}
	// Output:
	// valid=true code=""
	// valid=false code="USAGE_EXCEEDED"
}

func ExampleManager_ListPage() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)
	for _, name := range []string{"ci", "laptop", "staging", "prod", "backup"} {
		if _, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42", Name: name}); err != nil {
			panic(err)
		}
	}
	for after := int64(0); ; {
		page, next, err := keys.ListPage(ctx, "user-42", after, 2)
		if err != nil {
			panic(err)
		}
		for _, k := range page {
			fmt.Print(k.Name, " ")
		}
		fmt.Println("| next page after", next)
		if next == 0 {
			break
		}
		after = next
	}
	// Output:
	// ci laptop | next page after 2
	// staging prod | next page after 4
	// backup | next page after 0
}

func ExampleWithObserver_auditLog() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db, apikey.WithObserver(func(ctx context.Context, e apikey.Event) {
		switch e.Kind {
		case apikey.Verified:
			fmt.Println("key", e.KeyID, "verified:", e.Outcome())
		default:
			fmt.Println("key", e.KeyID, e.Kind)
		}
	}))
	plaintext, key, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42"})
	keys.Verify(ctx, plaintext)
	keys.Update(ctx, key.ID, apikey.UpdateParams{ResetRateLimit: true})
	keys.Delete(ctx, key.ID)
	keys.Verify(ctx, plaintext)
	// Output:
	// key 1 created
	// key 1 verified: valid
	// key 1 updated
	// key 1 deleted
	// key 0 verified: INVALID_API_KEY
}

func ExamplePermissions() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)
	plaintext, _, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42",
		Permissions: map[string][]string{"files": {"read"}}})

	for _, need := range []map[string][]string{{"files": {"read"}}, {"files": {"write"}}} {
		res, err := keys.Verify(ctx, plaintext, apikey.Permissions(need))
		if err != nil {
			panic(err)
		}
		fmt.Println(need, "→", res.Valid, res.Code, res.Status)
	}
	// Output:
	// map[files:[read]] → true  200
	// map[files:[write]] → false INSUFFICIENT_PERMISSIONS 403
}

// Reroll a leaked key: the new plaintext opens the same record at once,
// and the old one keeps working for the grace period, then is invalid.
func ExampleManager_Reroll() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db, apikey.WithClock(func() time.Time { return now }))
	quota := int64(10)
	old, key, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42", Remaining: &quota, RateLimit: &apikey.RateLimit{}})

	fresh, _, err := keys.Reroll(ctx, key.ID, time.Hour)
	if err != nil {
		panic(err)
	}
	for _, k := range []string{fresh, old} {
		res, _ := keys.Verify(ctx, k)
		fmt.Println(res.Valid, res.Key.ID == key.ID, *res.Key.Remaining)
	}
	now = now.Add(time.Hour)
	res, _ := keys.Verify(ctx, old)
	fmt.Println("after the grace:", res.Code)
	// Output:
	// true true 9
	// true true 8
	// after the grace: INVALID_API_KEY
}

// A key with a token budget besides its quota: each verification names
// the limits it spends and their costs; one without room denies, naming
// the limit, and spends nothing.
func ExampleLimitCost() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db, apikey.WithClock(func() time.Time { return now }))
	plaintext, _, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42", RateLimit: &apikey.RateLimit{},
		Limits: map[string]apikey.NamedLimit{"tokens": {Max: 1000, Window: time.Hour}}})
	for _, tokens := range []int64{600, 600, 400} {
		res, _ := keys.Verify(ctx, plaintext, apikey.LimitCost("tokens", tokens))
		if res.Valid {
			fmt.Println(tokens, "tokens: valid, used", res.Key.Limits["tokens"].Count)
		} else {
			fmt.Println(tokens, "tokens:", res.Code, res.DeniedBy, "try again in", res.TryAgainIn)
		}
	}
	// Output:
	// 600 tokens: valid, used 600
	// 600 tokens: RATE_LIMITED limit:tokens try again in 1h0m0s
	// 400 tokens: valid, used 1000
}

// Two keys of one team share the team's monthly token budget, here in
// storage-only mode: each verification spends the key's quota and the
// team's tokens together, or neither.
func ExampleManager_SetOwnerLimits() {
	ctx := context.Background()
	keys, _ := apikey.NewStorageOnly(memory.NewStorage())
	month := 30 * 24 * time.Hour
	if err := keys.SetOwnerLimits(ctx, "team-7", map[string]apikey.NamedLimit{"tokens": {Max: 1000, Window: month}}); err != nil {
		panic(err)
	}
	a, _, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "team-7", RateLimit: &apikey.RateLimit{}})
	b, _, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "team-7", RateLimit: &apikey.RateLimit{}})
	for _, k := range []string{a, b, b} {
		res, _ := keys.Verify(ctx, k, apikey.LimitCost("tokens", 400))
		fmt.Printf("valid=%v deniedBy=%q\n", res.Valid, res.DeniedBy)
	}
	used, _ := keys.OwnerLimits(ctx, "team-7")
	fmt.Println("team tokens used:", used["tokens"].Count)
	// Output:
	// valid=true deniedBy=""
	// valid=true deniedBy=""
	// valid=false deniedBy="ownerLimit:tokens"
	// team tokens used: 800
}
