package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

// claimRace stores recs, releases raceCallers claims of cost 1 at now
// (caller i claims key i % len(recs)) and returns the results per key.
func claimRace(ctx context.Context, f *storageFixture, clients []driver.SecondaryStorage, prefix string, recs []keystore.Key, now int64) ([]string, [][]keystore.Result, error) {
	keys := make([]string, len(recs))
	for i, rec := range recs {
		keys[i] = fmt.Sprintf("%s:%d", prefix, i)
		b, err := jsonText(rec)
		if err != nil {
			return nil, nil, err
		}
		if err := f.s.Set(ctx, keys[i], b, 0); err != nil {
			return nil, nil, fmt.Errorf("Set(%q): %w", keys[i], err)
		}
	}
	var errs errorList
	var mu sync.Mutex
	results := make([][]keystore.Result, len(recs))
	Release(raceCallers, func(i int) {
		k := i % len(recs)
		res, err := clients[i%len(clients)].(keystore.Claimer).Claim(ctx, keys[k], keystore.Request{Now: now, Cost: 1})
		if err != nil {
			errs.add(err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		results[k] = append(results[k], res)
	})
	if err := errs.err(); err != nil {
		return nil, nil, fmt.Errorf("Claim: %w", err)
	}
	return keys, results, nil
}

// claimTally counts the allowed claims and fails on a denial other than deny.
func claimTally(results []keystore.Result, deny keystore.Code) (int, error) {
	n := 0
	for _, r := range results {
		switch {
		case !r.Found:
			return 0, errors.New("a claim did not find the stored key")
		case r.Code == "":
			n++
		case r.Code != deny:
			return 0, fmt.Errorf("a claim was denied with %q; want only %q", r.Code, deny)
		}
	}
	return n, nil
}

// loadStored reads a stored key without a testing.TB, for the races.
func loadStored(ctx context.Context, f *storageFixture, key string) (keystore.Key, error) {
	var k keystore.Key
	v, ok, err := f.s.Get(ctx, key)
	if err != nil || !ok {
		return k, fmt.Errorf("Get(%q): present %v, err %v", key, ok, err)
	}
	return k, jsonValue(v, &k)
}

const ruleRaceClaimOneWinner = "keystore.Claimer decides and applies a claim in one atomic step: on keys with one use left, concurrent claims have exactly one winner per key, the others are denied usage_exceeded, and each key ends at 0"

func raceClaimOneWinner(ctx context.Context, f *storageFixture, clients []driver.SecondaryStorage, round int) error {
	recs := make([]keystore.Key, 4)
	for i := range recs {
		recs[i] = claimKey(int64(100*round+i+1), ptr64(1))
	}
	keys, results, err := claimRace(ctx, f, clients, "last:"+strconv.Itoa(round), recs, claimBase)
	if err != nil {
		return err
	}
	for k, key := range keys {
		n, err := claimTally(results[k], keystore.UsageExceeded)
		if err != nil {
			return fmt.Errorf("key %d: %w", k, err)
		}
		if n != 1 {
			return fmt.Errorf("key %d with one use left: %d of %d concurrent claims won; want exactly 1", k, n, len(results[k]))
		}
		after, err := loadStored(ctx, f, key)
		if err != nil {
			return err
		}
		if after.Remaining == nil || *after.Remaining != 0 {
			return fmt.Errorf("key %d: remaining %v after the race; want 0", k, show(after.Remaining))
		}
	}
	return nil
}

const ruleRaceClaimRefill = "keystore.Claimer, atomic: with a refill of A due, concurrent claims refill the key once, so exactly A of them are admitted"

func raceClaimRefill(ctx context.Context, f *storageFixture, clients []driver.SecondaryStorage, round int) error {
	const amount = 5
	rec := claimKey(int64(round+1), ptr64(0))
	rec.RefillInterval, rec.RefillAmount = ptr64(3_600_000), ptr64(amount)
	now := claimBase + 3_600_000 + 1
	keys, results, err := claimRace(ctx, f, clients, "refill:"+strconv.Itoa(round), []keystore.Key{rec}, now)
	if err != nil {
		return err
	}
	n, err := claimTally(results[0], keystore.UsageExceeded)
	if err != nil {
		return err
	}
	if n != amount {
		return fmt.Errorf("with a refill of %d due, %d of %d concurrent claims won; want exactly %d (one refill)", amount, n, raceCallers, amount)
	}
	after, err := loadStored(ctx, f, keys[0])
	if err != nil {
		return err
	}
	if after.Remaining == nil || *after.Remaining != 0 || after.LastRefillAt == nil || *after.LastRefillAt != now {
		return fmt.Errorf("after the race: remaining %s, lastRefillAt %s; want 0 and %d", show(after.Remaining), show(after.LastRefillAt), now)
	}
	return nil
}

const ruleRaceClaimRateLimit = "keystore.Claimer, atomic: a rate limit of M per window admits exactly M of many concurrent claims and spends exactly M of the quota"

func raceClaimRateLimit(ctx context.Context, f *storageFixture, clients []driver.SecondaryStorage, round int) error {
	const limit, quota = 3, 1000
	rec := claimKey(int64(round+1), ptr64(quota))
	rec.RateLimitEnabled, rec.RateLimitTimeWindow, rec.RateLimitMax = true, ptr64(60_000), ptr64(limit)
	keys, results, err := claimRace(ctx, f, clients, "rl:"+strconv.Itoa(round), []keystore.Key{rec}, claimBase)
	if err != nil {
		return err
	}
	n, err := claimTally(results[0], keystore.RateLimited)
	if err != nil {
		return err
	}
	if n != limit {
		return fmt.Errorf("rate limit %d per window: %d of %d concurrent claims won; want exactly %d", limit, n, raceCallers, limit)
	}
	after, err := loadStored(ctx, f, keys[0])
	if err != nil {
		return err
	}
	if after.RequestCount != limit || after.Remaining == nil || *after.Remaining != quota-limit {
		return fmt.Errorf("after the race: requestCount %d, remaining %s; want %d and %d", after.RequestCount, show(after.Remaining), limit, quota-limit)
	}
	return nil
}

const ruleRacePatchAndClaims = "keystore.Claimer: Patch sets its fields in one atomic step and every other field, counters included, keeps its current value, so no concurrent claim is lost"

func racePatchAndClaims(ctx context.Context, f *storageFixture, clients []driver.SecondaryStorage, round int) error {
	const quota, patchers = 1000, raceCallers / 4
	key := "patch:" + strconv.Itoa(round)
	b, err := jsonText(claimKey(int64(round+1), ptr64(quota)))
	if err != nil {
		return err
	}
	if err := f.s.Set(ctx, key, b, 0); err != nil {
		return fmt.Errorf("Set(%q): %w", key, err)
	}
	var errs errorList
	var won atomic.Int64
	Release(raceCallers, func(i int) {
		cl := clients[i%len(clients)].(keystore.Claimer)
		if i%4 == 0 {
			if _, ok, err := cl.Patch(ctx, key, map[string]any{"name": "patch " + strconv.Itoa(i)}); err != nil || !ok {
				errs.add(fmt.Errorf("Patch: ok %v, err %v", ok, err))
			}
			return
		}
		res, err := cl.Claim(ctx, key, keystore.Request{Now: claimBase, Cost: 1})
		switch {
		case err != nil:
			errs.add(fmt.Errorf("Claim: %w", err))
		case res.Code != "":
			errs.add(fmt.Errorf("Claim denied with %q on a key with quota %d", res.Code, quota))
		default:
			won.Add(1)
		}
	})
	if err := errs.err(); err != nil {
		return err
	}
	claims := int64(raceCallers - patchers)
	after, err := loadStored(ctx, f, key)
	if err != nil {
		return err
	}
	if won.Load() != claims || after.Remaining == nil || *after.Remaining != quota-claims {
		return fmt.Errorf("%d claims won among %d patches; remaining %s, want %d: a claim or a patch wrote back a counter it had read before another claim", won.Load(), patchers, show(after.Remaining), quota-claims)
	}
	if after.Name == nil || len(*after.Name) < len("patch ") || (*after.Name)[:6] != "patch " {
		return fmt.Errorf("name after the race = %s; want one of the patches'", show(after.Name))
	}
	return nil
}

const ruleRaceRerollStorage = "keystore.Rerollable, through storage-only managers: a key rerolled while 50 callers verify it, half with the old plaintext and half with the new one once it exists, admits exactly its quota; once the grace period is over, the old plaintext is invalid to 50 concurrent callers while the new one admits exactly the quota left"

// raceRerollStorage runs the API-key Rerolled scenario on storage-only
// managers, one per client, sharing one clock.
func raceRerollStorage(ctx context.Context, _ *storageFixture, clients []driver.SecondaryStorage, round int) error {
	r, err := storageRound(clients, "reroll", round)
	if err != nil {
		return err
	}
	return apiKeyRerolled(ctx, r)
}

const ruleRaceNamedLimitsStorage = "keystore.Claimer, through storage-only managers: a key with named limits requests (1000) and tokens (100), verified by 50 concurrent callers each spending 1 request and 7 tokens, admits exactly 14; the other 36 answer RATE_LIMITED naming tokens and spend nothing"

// raceNamedLimitsStorage runs the API-key NamedLimits scenario on
// storage-only managers, one per client.
func raceNamedLimitsStorage(ctx context.Context, _ *storageFixture, clients []driver.SecondaryStorage, round int) error {
	r, err := storageRound(clients, "limits", round)
	if err != nil {
		return err
	}
	return apiKeyNamedLimits(ctx, r)
}

const ruleRaceOwnerLimitsStorage = "keystore.OwnerSharing, through storage-only managers: two keys of one owner, one with a quota of 5, share the owner's named limit of 100 tokens: 50 concurrent callers, half on each key, each spending 7 tokens, admit exactly 14 in all, and each key's quota falls by exactly its own admissions"

// raceOwnerLimitsStorage runs the API-key OwnerLimits scenario on
// storage-only managers, one per client.
func raceOwnerLimitsStorage(ctx context.Context, _ *storageFixture, clients []driver.SecondaryStorage, round int) error {
	r, err := storageRound(clients, "owner", round)
	if err != nil {
		return err
	}
	return apiKeyOwnerLimits(ctx, r)
}

// storageRound is an API-key race round on storage-only managers, one per
// client, sharing one clock and a prefix of their own.
func storageRound(clients []driver.SecondaryStorage, what string, round int) (*apiKeyRound, error) {
	r := &apiKeyRound{clock: NewClock(time.UnixMilli(claimBase)), gate: &atomic.Pointer[readBarrier]{}}
	prefix := fmt.Sprintf("%s:%d:%d:", what, round, time.Now().UnixNano())
	for _, c := range clients {
		m, err := apikey.NewStorageOnly(c, apikey.WithClock(r.clock.Now), apikey.WithStoragePrefix(prefix))
		if err != nil {
			return nil, err
		}
		r.callers = append(r.callers, m)
	}
	r.admin = r.callers[0]
	return r, nil
}
