package adaptertest

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// apiKeyAnchoredCallers is how many callers race at each anchor instant,
// and apiKeyAnchoredAmount the refill.
const (
	apiKeyAnchoredCallers = 20
	apiKeyAnchoredAmount  = 5
)

// apiKeyAnchoredRefill races a refill anchored to a day of the month and
// a time: every caller remembers the key as spent, so at the instant each
// plans the refill from memory, in one guarded write; exactly one may win,
// and the others must read and decide again on the refilled key.
func apiKeyAnchoredRefill(ctx context.Context, r *apiKeyRound) error {
	at := r.clock.Now().Add(time.Hour).UTC() // whole milliseconds, as the round's clock
	midnight := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	a := &keystore.Anchor{Day: at.Day(), TimeOfDay: at.Sub(midnight), Location: time.UTC}
	plaintext, k, err := r.create(ctx, apikey.CreateParams{
		Remaining: ptrInt(0),
		Refill:    apikey.Refill{Amount: apiKeyAnchoredAmount, Anchor: a},
		RateLimit: &apikey.RateLimit{},
	})
	if err != nil {
		return err
	}
	r.clock.Set(at.Add(-time.Millisecond))
	o := r.verifyConcurrently(ctx, plaintext, apiKeyAnchoredCallers) // every caller reads, and remembers the key
	if err := o.expect(map[apikey.Code]int{apikey.CodeUsageExceeded: apiKeyAnchoredCallers}); err != nil {
		return fmt.Errorf("a millisecond before the anchor: %w", err)
	}
	for i, instant := range []time.Time{at, a.Next(at)} {
		r.clock.Set(instant)
		o = r.verifyAll(ctx, plaintext, apiKeyAnchoredCallers, false, nil) // some decide without a read
		if err := o.expect(map[apikey.Code]int{"": apiKeyAnchoredAmount, apikey.CodeUsageExceeded: apiKeyAnchoredCallers - apiKeyAnchoredAmount}); err != nil {
			return fmt.Errorf("at anchor instant %d (%v): %w", i, instant, err)
		}
		for left := int64(0); left < apiKeyAnchoredAmount; left++ {
			if o.left[left] != 1 {
				return fmt.Errorf("at anchor instant %d: admitted callers saw remaining %v, want each of 0..%d once (exactly one refill)", i, o.left, apiKeyAnchoredAmount-1)
			}
		}
		got, err := r.admin.Get(ctx, k.ID)
		if err != nil {
			return err
		}
		if !got.LastRefillAt.Equal(instant) {
			return fmt.Errorf("at anchor instant %d: lastRefillAt %v, want %v", i, got.LastRefillAt, instant)
		}
		if err := r.expectStored(ctx, k.ID, 0, 0); err != nil {
			return err
		}
		if i == 0 {
			r.clock.Set(instant.Add(time.Hour))
			o = r.verifyAll(ctx, plaintext, apiKeyAnchoredCallers, false, nil)
			if err := o.expect(map[apikey.Code]int{apikey.CodeUsageExceeded: apiKeyAnchoredCallers}); err != nil {
				return fmt.Errorf("an hour after the anchor instant, refilled once: %w", err)
			}
		}
	}
	return nil
}
