package adaptertest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
)

func apiKeyLastUnit(ctx context.Context, r *apiKeyRound) error {
	plaintext, k, err := r.create(ctx, apikey.CreateParams{Remaining: ptrInt(1), RateLimit: &apikey.RateLimit{}})
	if err != nil {
		return err
	}
	o := r.verifyConcurrently(ctx, plaintext, apiKeyLastUnitCallers)
	if err := o.expect(map[apikey.Code]int{"": 1, apikey.CodeUsageExceeded: apiKeyLastUnitCallers - 1}); err != nil {
		return err
	}
	return r.expectStored(ctx, k.ID, 0, 0)
}

// apiKeyPermissionCallers is how many callers race in each half of the
// PermissionRevoked scenario, and apiKeyPermissionQuota the quota left
// for the second half.
const (
	apiKeyPermissionCallers = 50
	apiKeyPermissionQuota   = 30
)

func apiKeyPermissionRevoked(ctx context.Context, r *apiKeyRound) error {
	write := apikey.Permissions(map[string][]string{"files": {"write"}})
	read := apikey.Permissions(map[string][]string{"files": {"read"}})
	plaintext, k, err := r.create(ctx, apikey.CreateParams{Remaining: ptrInt(apiKeyPermissionQuota + int64(len(r.callers))),
		RateLimit: &apikey.RateLimit{}, Permissions: map[string][]string{"files": {"read", "write"}}})
	if err != nil {
		return err
	}
	// Every caller remembers the key as holding files:write.
	for i, m := range r.callers {
		if res, err := m.Verify(ctx, plaintext, write); err != nil || !res.Valid {
			return fmt.Errorf("caller %d, before the change: %+v, %v; want valid", i, res, err)
		}
	}
	if _, err := r.admin.Update(ctx, k.ID, apikey.UpdateParams{Permissions: map[string][]string{"files": {"read"}}}); err != nil {
		return err
	}
	// Each caller's write, planned from the key it remembers, misses and
	// reads: all of them read, so the barrier lines them up.
	o := r.verifyConcurrently(ctx, plaintext, apiKeyPermissionCallers, write)
	if err := o.expect(map[apikey.Code]int{apikey.CodeForbidden: apiKeyPermissionCallers}); err != nil {
		return fmt.Errorf("requiring the permission taken away: %w", err)
	}
	if err := r.expectStored(ctx, k.ID, apiKeyPermissionQuota, 0); err != nil {
		return err
	}
	// The callers now remember the key as it is: most decide without a read.
	o = r.verifyAll(ctx, plaintext, apiKeyPermissionCallers, false, []apikey.VerifyOption{read})
	if err := o.expect(map[apikey.Code]int{"": apiKeyPermissionQuota, apikey.CodeUsageExceeded: apiKeyPermissionCallers - apiKeyPermissionQuota}); err != nil {
		return fmt.Errorf("requiring the permission kept: %w", err)
	}
	return r.expectStored(ctx, k.ID, 0, 0)
}

// The figures of the NamedLimits scenario.
const (
	apiKeyLimitCallers = 50
	apiKeyLimitTokens  = 100
	apiKeyLimitCost    = 7
)

func apiKeyNamedLimits(ctx context.Context, r *apiKeyRound) error {
	const admitted = apiKeyLimitTokens / apiKeyLimitCost
	plaintext, k, err := r.create(ctx, apikey.CreateParams{Remaining: ptrInt(1000), RateLimit: &apikey.RateLimit{},
		Limits: map[string]apikey.NamedLimit{"requests": {Max: 1000, Window: time.Hour}, "tokens": {Max: apiKeyLimitTokens, Window: time.Hour}}})
	if err != nil {
		return err
	}
	// Every caller reads the limits before any writes them: all decide
	// from one snapshot, and only the guarded writes keep the counts.
	if r.limitGate != nil {
		r.limitGate.Store(&readBarrier{n: apiKeyLimitCallers, open: make(chan struct{})})
		defer r.limitGate.Store(nil)
	}
	o := r.verifyAll(ctx, plaintext, apiKeyLimitCallers, false,
		[]apikey.VerifyOption{apikey.LimitCost("requests", 1), apikey.LimitCost("tokens", apiKeyLimitCost)})
	if err := o.expect(map[apikey.Code]int{"": admitted, apikey.CodeRateLimited: apiKeyLimitCallers - admitted}); err != nil {
		return err
	}
	got, err := r.admin.Get(ctx, k.ID)
	if err != nil {
		return err
	}
	if got.Remaining == nil || *got.Remaining != 1000-admitted || got.Limits["requests"].Count != admitted || got.Limits["tokens"].Count != admitted*apiKeyLimitCost {
		return fmt.Errorf("stored remaining %v, limits %+v; want %d, requests %d and tokens %d", got.Remaining, got.Limits, 1000-admitted, admitted, admitted*apiKeyLimitCost)
	}
	return nil
}

func apiKeyOwnerLimits(ctx context.Context, r *apiKeyRound) error {
	const admitted, quotaA = apiKeyLimitTokens / apiKeyLimitCost, 5
	owner := fmt.Sprintf("owner-%d", time.Now().UnixNano())
	if err := r.admin.SetOwnerLimits(ctx, owner, map[string]apikey.NamedLimit{"tokens": {Max: apiKeyLimitTokens, Window: time.Hour}}); err != nil {
		return err
	}
	var keys [2]string
	var ids [2]int64
	for i, q := range []int64{quotaA, 1000} {
		plaintext, k, err := r.admin.Create(ctx, apikey.CreateParams{ReferenceID: owner, Remaining: ptrInt(q), RateLimit: &apikey.RateLimit{}})
		if err != nil {
			return err
		}
		keys[i], ids[i] = plaintext, k.ID
	}
	if r.limitGate != nil {
		r.limitGate.Store(&readBarrier{n: apiKeyLimitCallers, open: make(chan struct{})})
		defer r.limitGate.Store(nil)
	}
	o := &outcomes{codes: map[apikey.Code]int{}, left: map[int64]int{}}
	var valid [2]atomic.Int64
	Release(apiKeyLimitCallers, func(i int) {
		res, err := r.callers[i%len(r.callers)].Verify(ctx, keys[i%2], apikey.LimitCost("tokens", apiKeyLimitCost))
		if o.add(i, res, err) && res.Valid {
			valid[i%2].Add(1)
		}
	})
	if err := o.errs.err(); err != nil {
		return err
	}
	if o.codes[""] != admitted {
		return fmt.Errorf("verifications answered %s, want %d admitted", describe(o.codes), admitted)
	}
	got, err := r.admin.OwnerLimits(ctx, owner)
	if err != nil {
		return err
	}
	if got["tokens"].Count != admitted*apiKeyLimitCost {
		return fmt.Errorf("the owner's tokens counted %d, want %d", got["tokens"].Count, admitted*apiKeyLimitCost)
	}
	for i, q := range []int64{quotaA, 1000} {
		k, err := r.admin.Get(ctx, ids[i])
		if err != nil {
			return err
		}
		if want := q - valid[i].Load(); k.Remaining == nil || *k.Remaining != want {
			return fmt.Errorf("key %d: remaining %v after %d admissions, want %d", i, k.Remaining, valid[i].Load(), want)
		}
	}
	return nil
}

// The load and figures of the Rerolled scenario.
const (
	apiKeyRerollCallers = 50
	apiKeyRerollQuota   = 30
	apiKeyRerollAfter   = 10 // the quota given once the grace is over
	apiKeyRerollGrace   = time.Hour
)

func apiKeyRerolled(ctx context.Context, r *apiKeyRound) error {
	old, k, err := r.create(ctx, apikey.CreateParams{Remaining: ptrInt(apiKeyRerollQuota), RateLimit: &apikey.RateLimit{}})
	if err != nil {
		return err
	}
	// Every caller remembers the key by its old hash, so that its first
	// write after the reroll is planned on a hash the row no longer has.
	for i, m := range r.callers {
		if res, err := m.Verify(ctx, old, apikey.Cost(0)); err != nil || !res.Valid {
			return fmt.Errorf("caller %d, before the reroll: %+v, %v; want valid", i, res, err)
		}
	}
	var fresh string
	rerolled := make(chan struct{})
	o := &outcomes{codes: map[apikey.Code]int{}, left: map[int64]int{}}
	Release(apiKeyRerollCallers+1, func(i int) {
		if i == apiKeyRerollCallers {
			defer close(rerolled)
			p, _, err := r.admin.Reroll(ctx, k.ID, apiKeyRerollGrace)
			if err != nil {
				o.errs.add(fmt.Errorf("Reroll: %w", err))
			}
			fresh = p
			return
		}
		key := old
		if i%2 == 1 {
			<-rerolled
			if key = fresh; key == "" {
				return // the reroll failed, and says so
			}
		}
		res, err := r.callers[i%len(r.callers)].Verify(ctx, key)
		o.add(i, res, err)
	})
	if err := o.expect(map[apikey.Code]int{"": apiKeyRerollQuota, apikey.CodeUsageExceeded: apiKeyRerollCallers - apiKeyRerollQuota}); err != nil {
		return fmt.Errorf("across the reroll: %w", err)
	}
	if err := r.expectStored(ctx, k.ID, 0, 0); err != nil {
		return err
	}
	r.clock.Advance(apiKeyRerollGrace)
	if _, err := r.admin.Update(ctx, k.ID, apikey.UpdateParams{Remaining: ptrInt(apiKeyRerollAfter)}); err != nil {
		return err
	}
	o = r.verifyConcurrently(ctx, old, apiKeyRerollCallers)
	if err := o.expect(map[apikey.Code]int{apikey.CodeInvalid: apiKeyRerollCallers}); err != nil {
		return fmt.Errorf("the old plaintext after its grace: %w", err)
	}
	o = r.verifyAll(ctx, fresh, apiKeyRerollCallers, false, nil)
	if err := o.expect(map[apikey.Code]int{"": apiKeyRerollAfter, apikey.CodeUsageExceeded: apiKeyRerollCallers - apiKeyRerollAfter}); err != nil {
		return fmt.Errorf("the new plaintext after the old one's grace: %w", err)
	}
	return r.expectStored(ctx, k.ID, 0, 0)
}

func apiKeyRefillDue(ctx context.Context, r *apiKeyRound) error {
	const amount = 5
	plaintext, k, err := r.create(ctx, apikey.CreateParams{
		Remaining: ptrInt(0),
		Refill:    apikey.Refill{Interval: time.Hour, Amount: amount},
		RateLimit: &apikey.RateLimit{},
	})
	if err != nil {
		return err
	}
	r.clock.Advance(2 * time.Hour)
	refillAt := r.clock.Now()
	o := r.verifyConcurrently(ctx, plaintext, apiKeyRefillCallers)
	if err := o.expect(map[apikey.Code]int{"": amount, apikey.CodeUsageExceeded: apiKeyRefillCallers - amount}); err != nil {
		return err
	}
	// One refill: the admitted callers saw remaining 4, 3, 2, 1, 0 once
	// each; a second refill would repeat some of them.
	for left := int64(0); left < amount; left++ {
		if o.left[left] != 1 {
			return fmt.Errorf("admitted callers saw remaining %v, want each of 0..%d once (exactly one refill)", o.left, amount-1)
		}
	}
	got, err := r.admin.Get(ctx, k.ID)
	if err != nil {
		return err
	}
	if !got.LastRefillAt.Equal(refillAt) {
		return fmt.Errorf("lastRefillAt %v, want %v", got.LastRefillAt, refillAt)
	}
	return r.expectStored(ctx, k.ID, 0, 0)
}

func apiKeyRateLimitLastSlot(ctx context.Context, r *apiKeyRound) error {
	const max, quota = 5, 100
	plaintext, k, err := r.create(ctx, apikey.CreateParams{
		Remaining: ptrInt(quota),
		RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Hour, Max: max},
	})
	if err != nil {
		return err
	}
	for i := 0; i < max-1; i++ {
		res, err := r.admin.Verify(ctx, plaintext)
		if err != nil || !res.Valid {
			return fmt.Errorf("setting up request %d: %+v, %v", i, res, err)
		}
	}
	o := r.verifyConcurrently(ctx, plaintext, apiKeyRateCallers)
	if err := o.expect(map[apikey.Code]int{"": 1, apikey.CodeRateLimited: apiKeyRateCallers - 1}); err != nil {
		return err
	}
	return r.expectStored(ctx, k.ID, quota-max, max)
}
