package apikey_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/memory"
)

// A customer who signed up on the 31st has their credits refilled on the
// 31st at 09:00 in Berlin: on February's last day, and on March 31st at
// 09:00 summer time. The refill tops the quota up to Amount once per
// anchor instant, at the first verification after it.
func ExampleRefill_anchor() {
	ctx := context.Background()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2027, 1, 31, 10, 0, 0, 0, berlin)
	db, _ := core.New(memory.New()) // with the optional apikeyRefill table, as CreateTables makes it
	keys, _ := apikey.New(db, apikey.WithClock(func() time.Time { return now }))

	quota := int64(1)
	plaintext, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "customer-7", Remaining: &quota, RateLimit: &apikey.RateLimit{},
		Refill: apikey.Refill{Amount: 100, Anchor: &keystore.Anchor{Day: 31, TimeOfDay: 9 * time.Hour, Location: berlin}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _ := keys.Verify(ctx, plaintext)
	fmt.Println("Jan 31:", res.Valid, *res.Key.Remaining)
	res, _ = keys.Verify(ctx, plaintext)
	fmt.Println("Jan 31 again:", res.Code, "refilled in", res.TryAgainIn)

	now = time.Date(2027, 2, 28, 9, 0, 0, 0, berlin)
	res, _ = keys.Verify(ctx, plaintext)
	fmt.Println("Feb 28:", res.Valid, *res.Key.Remaining, "refilled at", res.Key.LastRefillAt.In(berlin).Format("Jan 2 15:04 MST"))

	_, _, err = keys.Create(ctx, apikey.CreateParams{ReferenceID: "customer-8", Remaining: &quota,
		Refill: apikey.Refill{Amount: 100, Anchor: &keystore.Anchor{Day: 32, Location: berlin}}})
	fmt.Println(err)
	// Output:
	// Jan 31: true 0
	// Jan 31 again: USAGE_EXCEEDED refilled in 671h0m0s
	// Feb 28: true 99 refilled at Feb 28 09:00 CET
	// apikey: invalid request: Refill.Anchor: refill day 32 is not a day of the month (1 to 31; a month shorter than the day refills on its last day)
}
