package apikey

// ClaimRequest asks a [Claimer] to verify and consume one key. Every number
// is a plain count or epoch milliseconds, so that a storage can evaluate it
// in a server-side script.
type ClaimRequest struct {
	Now  int64 // epoch milliseconds, the verifier's clock
	Cost int64 // units to consume, ≥ 0; 0 checks without writing
	// Hash is the hash of the key presented, which must open the stored
	// key (rule 0); "" skips the check.
	Hash string
	// Limits are the named limits the verification spends (rule 5b), in
	// name order, each named once.
	Limits []LimitSpend
	// RequireAll and RequireAny are the permissions the verification
	// requires: every one of RequireAll, and one of RequireAny when it is
	// not empty (see rule 3).
	RequireAll, RequireAny []Permission
	// Owner is the storage key of the record of the key's owner's named
	// limits (a StoredKey holding only Limits and LimitCounts), "" for
	// none. A Claimer that implements [OwnerSharing] reads it in the same
	// atomic step as the key, a missing record holding no limits, and
	// writes its LimitCounts back when the claim changes them (rule 5b).
	// Storage-only managers give it the {hash tag} of the key's storage
	// key, so that a Redis Cluster keeps both on one node.
	Owner string
}

// ClaimResult is what a [Claimer] answers.
type ClaimResult struct {
	Found      bool      // false: no key is stored under the storage key
	Code       Code      // "" when the claim was allowed, else the denial
	TryAgainIn int64     // milliseconds, for CodeRateLimited and for CodeUsageExceeded with a refill
	Limit      string    // the named limit that denied with CodeRateLimited, else ""
	OwnerLimit bool      // that limit is the owner's, not the key's own
	Key        StoredKey // the key after the claim (unchanged when denied)
}

// ApplyClaim is the reference semantics of a claim, applied to k, and to
// the record of its owner's limits when owner is not nil, in place: a
// [Claimer] must answer exactly as ApplyClaim does on the stored key (and
// an [OwnerSharing] one on the owner's record at req.Owner, nil when there
// is none), as one atomic step. k == nil means no key is stored. With now = req.Now,
// cost = req.Cost and need = max(cost, 1), the rules, in order:
//
//  0. req.Hash is neither "" nor k.Key, and k.Rerolled (JSON text of
//     earlier hash → end of its grace in epoch ms; none when nil or
//     malformed) gives it no end after now → Found == false, as if no key
//     were stored: an old plaintext whose grace is over opens nothing.
//  1. !k.Enabled → CodeDisabled.
//  2. k.ExpiresAt != nil && *k.ExpiresAt ≤ now → CodeExpired.
//  3. The permissions k.Permissions lists (JSON text of resource →
//     actions; none when nil or malformed) lack one of req.RequireAll, or,
//     req.RequireAny not being empty, hold none of it → CodeForbidden.
//  4. k.Remaining != nil && *k.Remaining < need and the key has no refill
//     (refillInterval > 0 and refillAmount > 0) → CodeUsageExceeded.
//  5. Rate limit, when rateLimitEnabled && rateLimitTimeWindow > 0 &&
//     rateLimitMax != nil (window w, max m):
//     lastRequest == nil or lastRequest ≤ now − w: a new window; need > m →
//     CodeRateLimited (TryAgainIn w), else step "reset".
//     Otherwise requestCount > m − need → CodeRateLimited with TryAgainIn =
//     lastRequest + w − now; else step "increment".
//     5b. Each named limit of req.Limits that k.Limits holds (JSON text of
//     name → {"max","window"}, window in ms; none when nil or malformed),
//     in order, with cost c and need = max(c, 1), its counter being
//     k.LimitCounts's entry (JSON text of name → {"count","start"}, start
//     in epoch ms; count and start 0 when absent, nil or malformed):
//     start == 0 or start ≤ now − window: a new window;
//     need > max → CodeRateLimited (TryAgainIn window), else step "open".
//     Otherwise count > max − need → CodeRateLimited with TryAgainIn =
//     start + window − now; else step "add". A name k lacks is skipped.
//     Then, when owner != nil, the same for each of req.Limits that
//     owner.Limits holds, on owner.LimitCounts; a denial there sets
//     OwnerLimit. (The key's limits first, as the database locks them.)
//  6. Quota, when k.Remaining != nil: the refill is due when lastRefillAt ≤
//     now − refillInterval, or, lastRefillAt being nil, when createdAt ≤ now −
//     refillInterval. Due: refillAmount < need → CodeUsageExceeded, else step
//     "refill". Not due: *k.Remaining < need → CodeUsageExceeded (TryAgainIn =
//     time to the next refill, 0 without refill), else step "decrement".
//  7. Allowed. When cost > 0 the steps are applied: reset sets requestCount
//     = cost and lastRequest = now; increment adds cost to requestCount;
//     refill sets remaining = refillAmount − cost and lastRefillAt = now;
//     decrement subtracts cost from remaining; open sets a named limit's
//     count = c and start = now in LimitCounts, add adds c to its count
//     (neither when c is 0), in k's LimitCounts or the owner's; and
//     k.updatedAt = now (the owner's record changes only its counters).
//     A denial changes nothing.
func ApplyClaim(k, owner *StoredKey, req ClaimRequest) ClaimResult {
	if k == nil || !k.opensWith(req.Hash, req.Now) {
		return ClaimResult{}
	}
	var counts, ownerCounts map[string]limitCount
	var lims []limitCheck
	n := len(req.Limits)
	if n > 0 {
		counts = decodeMap[limitCount](k.LimitCounts)
		lims = limitChecks(decodeMap[limitConfig](k.Limits), counts, req.Limits, false)
		if owner != nil {
			ownerCounts = decodeMap[limitCount](owner.LimitCounts)
			lims = append(lims, limitChecks(decodeMap[limitConfig](owner.Limits), ownerCounts, req.Limits, true)...)
		}
	}
	p := decide(k, req.Now, req.Cost, &required{all: req.RequireAll, any: req.RequireAny}, lims)
	res := ClaimResult{Found: true, Code: p.code, TryAgainIn: p.tryAgainIn, Limit: p.limit, OwnerLimit: p.limitOwner}
	if p.code == "" && req.Cost > 0 {
		p.apply(k, req.Now, req.Cost)
		if counts, changed := applyLimits(counts, lims[:n], p.limitReset, req.Now); changed {
			k.LimitCounts = encodeMap(counts)
		}
		if owner != nil {
			if counts, changed := applyLimits(ownerCounts, lims[n:], p.limitReset>>n, req.Now); changed {
				owner.LimitCounts = encodeMap(counts)
			}
		}
	}
	res.Key = *k
	return res
}

// opensWith reports whether the key presented with the given hash opens
// k at now (rule 0 of [ApplyClaim]).
func (k *StoredKey) opensWith(hash string, now int64) bool {
	if hash == "" || hash == k.Key {
		return true
	}
	end, ok := k.rerolledUntil()[hash]
	return ok && end > now
}

// rerolledUntil decodes k.Rerolled; malformed text holds nothing.
func (k *StoredKey) rerolledUntil() map[string]int64 { return decodeMap[int64](k.Rerolled) }

// plan is the decision for one verification: a denial code, or the steps
// that consuming takes.
type plan struct {
	code        Code
	tryAgainIn  int64  // ms
	rlReset     bool   // requestCount = cost, lastRequest = now
	rlIncrement bool   // requestCount += cost
	refill      bool   // remaining = refillAmount − cost, lastRefillAt = now
	decrement   bool   // remaining −= cost
	limit       string // the named limit that denied
	limitOwner  bool   // it is the owner's
	limitReset  uint32 // bit i: the verification opens a new window of its i-th named limit
}

// decide applies the verification rules of [ApplyClaim] to a key as read,
// without changing it.
func decide(k *StoredKey, now, cost int64, r *required, lims []limitCheck) plan {
	need := max(cost, 1)
	switch {
	case !k.Enabled:
		return plan{code: CodeDisabled}
	case k.ExpiresAt != nil && *k.ExpiresAt <= now:
		return plan{code: CodeExpired}
	case !permitted(k.Permissions, r):
		return plan{code: CodeForbidden}
	case k.Remaining != nil && *k.Remaining < need && !k.refillable():
		return plan{code: CodeUsageExceeded}
	}
	var p plan
	if k.rateLimited() {
		w, m := *k.RateLimitTimeWindow, *k.RateLimitMax
		switch {
		case k.LastRequest == nil || *k.LastRequest <= now-w:
			if need > m {
				return plan{code: CodeRateLimited, tryAgainIn: w}
			}
			p.rlReset = true
		case k.RequestCount > m-need:
			return plan{code: CodeRateLimited, tryAgainIn: *k.LastRequest + w - now}
		default:
			p.rlIncrement = true
		}
	}
	if len(lims) > 0 {
		lp := decideLimits(lims, now)
		if lp.code != "" {
			return lp
		}
		p.limitReset = lp.limitReset
	}
	if k.Remaining != nil {
		switch due, next := refillDue(k, now); {
		case due && *k.RefillAmount < need:
			return plan{code: CodeUsageExceeded}
		case due:
			p.refill = true
		case *k.Remaining < need:
			return plan{code: CodeUsageExceeded, tryAgainIn: next}
		default:
			p.decrement = true
		}
	}
	return p
}

// refillDue reports whether a refill is due at now and, when it is not,
// how many milliseconds remain until it is (0 for a key without refill).
// A key never refilled measures the interval from its creation.
func refillDue(k *StoredKey, now int64) (due bool, wait int64) {
	if !k.refillable() {
		return false, 0
	}
	last := k.CreatedAt
	if k.LastRefillAt != nil {
		last = *k.LastRefillAt
	}
	if last <= now-*k.RefillInterval {
		return true, 0
	}
	return false, last + *k.RefillInterval - now
}

// apply performs the plan's steps on k, as the guarded write does in the
// database.
func (p plan) apply(k *StoredKey, now, cost int64) {
	if p.rlReset {
		k.RequestCount, k.LastRequest = cost, ptr(now)
	}
	if p.rlIncrement {
		k.RequestCount += cost
	}
	if p.refill {
		k.Remaining, k.LastRefillAt = ptr(*k.RefillAmount-cost), ptr(now)
	}
	if p.decrement {
		k.Remaining = ptr(*k.Remaining - cost)
	}
	k.UpdatedAt = now
}
