package keystore

import (
	"encoding/json"
	"slices"
)

// Request asks a [Claimer] to verify and consume one key. Every number is
// a plain count or epoch milliseconds, so that a storage can evaluate it in
// a server-side script.
type Request struct {
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
	// limits (a Key holding only Limits and LimitCounts), "" for none. A
	// Claimer that implements [OwnerSharing] reads it in the same atomic
	// step as the key, a missing record holding no limits, and writes its
	// LimitCounts back when the claim changes them (rule 5b). Storage-only
	// managers give it the {hash tag} of the key's storage key, so that a
	// Redis Cluster keeps both on one node.
	Owner string
}

// LimitSpend is a named limit a verification spends, and how much.
type LimitSpend struct {
	Name string
	Cost int64
}

// Result is what a [Claimer] answers.
type Result struct {
	Found      bool   // false: no key is stored under the storage key
	Code       Code   // "" when the claim was allowed, else the denial
	TryAgainIn int64  // milliseconds, for RateLimited and for UsageExceeded with a refill
	Limit      string // the named limit that denied with RateLimited, else ""
	OwnerLimit bool   // that limit is the owner's, not the key's own
	Key        Key    // the key after the claim (unchanged when denied)
}

// Apply is the reference semantics of a claim, applied to k, and to the
// record of its owner's limits when owner is not nil, in place: a
// [Claimer] must answer exactly as Apply does on the stored key (and an
// [OwnerSharing] one on the owner's record at req.Owner, nil when there is
// none), as one atomic step. k == nil means no key is stored. With now =
// req.Now, cost = req.Cost and need = max(cost, 1), the rules, in order:
//
//  0. req.Hash is neither "" nor k.Key, and k.Rerolled (JSON text of
//     earlier hash → end of its grace in epoch ms; none when nil or
//     malformed) gives it no end after now → Found == false, as if no key
//     were stored: an old plaintext whose grace is over opens nothing.
//  1. !k.Enabled → Disabled.
//  2. k.ExpiresAt != nil && *k.ExpiresAt ≤ now → Expired.
//  3. The permissions k.Permissions lists (JSON text of resource →
//     actions; none when nil or malformed) lack one of req.RequireAll, or,
//     req.RequireAny not being empty, hold none of it → Forbidden.
//  4. k.Remaining != nil && *k.Remaining < need and the key has no refill
//     ([Key.Refillable]) → UsageExceeded.
//  5. Rate limit, when rateLimitEnabled && rateLimitTimeWindow > 0 &&
//     rateLimitMax != nil (window w, max m):
//     lastRequest == nil or lastRequest ≤ now − w: a new window; need > m →
//     RateLimited (TryAgainIn w), else step "reset".
//     Otherwise requestCount > m − need → RateLimited with TryAgainIn =
//     lastRequest + w − now; else step "increment".
//     5b. Each named limit of req.Limits that k.Limits holds (JSON text of
//     name → {"max","window"}, window in ms; none when nil or malformed),
//     in order, with cost c and need = max(c, 1), its counter being
//     k.LimitCounts's entry (JSON text of name → {"count","start"}, start
//     in epoch ms; count and start 0 when absent, nil or malformed):
//     start == 0 or start ≤ now − window: a new window;
//     need > max → RateLimited (TryAgainIn window), else step "open".
//     Otherwise count > max − need → RateLimited with TryAgainIn =
//     start + window − now; else step "add". A name k lacks is skipped.
//     Then, when owner != nil, the same for each of req.Limits that
//     owner.Limits holds, on owner.LimitCounts; a denial there sets
//     OwnerLimit. (The key's limits first, as the database locks them.)
//  6. Quota, when k.Remaining != nil: the refill is due when lastRefillAt ≤
//     now − refillInterval, or, lastRefillAt being nil, when createdAt ≤ now −
//     refillInterval; for an anchored refill ([Key.Anchored]), when
//     that time is before the latest anchor instant at or before now
//     ([Anchor.Due]; storage scripts may leave anchors out, as
//     storage-only managers refuse them). Due: refillAmount < need → UsageExceeded, else step
//     "refill". Not due: *k.Remaining < need → UsageExceeded (TryAgainIn =
//     time to the next refill, 0 without refill), else step "decrement".
//  7. Allowed. When cost > 0 the steps are applied: reset sets requestCount
//     = cost and lastRequest = now; increment adds cost to requestCount;
//     refill sets remaining = refillAmount − cost and lastRefillAt = now;
//     decrement subtracts cost from remaining; open sets a named limit's
//     count = c and start = now in LimitCounts, add adds c to its count
//     (neither when c is 0), in k's LimitCounts or the owner's; and
//     k.updatedAt = now (the owner's record changes only its counters).
//     A denial changes nothing.
func Apply(k, owner *Key, req Request) Result {
	if k == nil || !k.OpensWith(req.Hash, req.Now) {
		return Result{}
	}
	lims, counts, ownerCounts := limitsOf(k, owner, req.Limits)
	n := len(req.Limits)
	p := decide(k, &req, lims)
	res := Result{Found: true, Code: p.Code, TryAgainIn: p.TryAgainIn, Limit: p.Limit, OwnerLimit: p.OwnerLimit}
	if p.Code == "" && req.Cost > 0 {
		p.apply(k, req.Now, req.Cost)
		if counts, changed := applyLimits(counts, lims[:n], p.Opens, req.Now); changed {
			k.SetLimitCounters(counts)
		}
		if owner != nil {
			if counts, changed := applyLimits(ownerCounts, lims[n:], p.Opens>>n, req.Now); changed {
				owner.SetLimitCounters(counts)
			}
		}
	}
	res.Key = *k
	return res
}

// Plan is the decision of rules 1 to 6 of [Apply] for a key as read: a
// denial, or the steps of rule 7 that consuming takes.
type Plan struct {
	Code       Code   // "" when allowed
	TryAgainIn int64  // ms, as Result's
	Limit      string // the named limit that denied
	OwnerLimit bool   // it is the owner's

	Reset     bool // requestCount = cost, lastRequest = now
	Increment bool // requestCount += cost
	Refill    bool // remaining = refillAmount − cost, lastRefillAt = now
	Decrement bool // remaining −= cost
	// Opens has bit i set when the verification opens a new window of
	// req.Limits[i], on the key for i < len(req.Limits) and on the owner's
	// record for the others (bit len(req.Limits)+j for req.Limits[j]); a
	// limit present without its bit adds to its open window.
	Opens uint32
}

// Decide applies rules 1 to 6 of [Apply] to k, and to owner's limits when
// owner is not nil, without changing either; it does not check the hash
// (rule 0).
func Decide(k, owner *Key, req Request) Plan {
	lims, _, _ := limitsOf(k, owner, req.Limits)
	return decide(k, &req, lims)
}

// decide is Decide on limits already paired with their state.
func decide(k *Key, req *Request, lims []limitCheck) Plan {
	now, need := req.Now, max(req.Cost, 1)
	switch {
	case !k.Enabled:
		return Plan{Code: Disabled}
	case k.ExpiresAt != nil && *k.ExpiresAt <= now:
		return Plan{Code: Expired}
	case !permitted(k.Permissions, req.RequireAll, req.RequireAny):
		return Plan{Code: Forbidden}
	case k.Remaining != nil && *k.Remaining < need && !k.Refillable():
		return Plan{Code: UsageExceeded}
	}
	var p Plan
	if k.RateLimited() {
		w, m := *k.RateLimitTimeWindow, *k.RateLimitMax
		switch {
		case k.LastRequest == nil || *k.LastRequest <= now-w:
			if need > m {
				return Plan{Code: RateLimited, TryAgainIn: w}
			}
			p.Reset = true
		case k.RequestCount > m-need:
			return Plan{Code: RateLimited, TryAgainIn: *k.LastRequest + w - now}
		default:
			p.Increment = true
		}
	}
	if len(lims) > 0 {
		lp := decideLimits(lims, now)
		if lp.Code != "" {
			return lp
		}
		p.Opens = lp.Opens
	}
	if k.Remaining != nil {
		switch due, next := refillDue(k, now); {
		case due && *k.RefillAmount < need:
			return Plan{Code: UsageExceeded}
		case due:
			p.Refill = true
		case *k.Remaining < need:
			return Plan{Code: UsageExceeded, TryAgainIn: next}
		default:
			p.Decrement = true
		}
	}
	return p
}

// refillDue reports whether a refill is due at now and, when it is not,
// how many milliseconds remain until it is (0 for a key without refill).
// A key never refilled measures the interval from its creation.
func refillDue(k *Key, now int64) (due bool, wait int64) {
	if !k.Refillable() {
		return false, 0
	}
	last := k.CreatedAt
	if k.LastRefillAt != nil {
		last = *k.LastRefillAt
	}
	if a, ok := k.Anchored(); ok {
		return a.Due(last, now)
	}
	if last <= now-*k.RefillInterval {
		return true, 0
	}
	return false, last + *k.RefillInterval - now
}

// apply performs the plan's steps on the key's own fields, as the guarded
// write does in the database.
func (p *Plan) apply(k *Key, now, cost int64) {
	if p.Reset {
		at := now
		k.RequestCount, k.LastRequest = cost, &at
	}
	if p.Increment {
		k.RequestCount += cost
	}
	if p.Refill {
		r, at := *k.RefillAmount-cost, now
		k.Remaining, k.LastRefillAt = &r, &at
	}
	if p.Decrement {
		r := *k.Remaining - cost
		k.Remaining = &r
	}
	k.UpdatedAt = now
}

// Permission is one action on one resource, as a key's permissions list
// them (resource → actions).
type Permission struct {
	Resource string
	Action   string
}

// permitted reports whether the stored permissions (JSON text of resource
// → actions, or nil) hold every one of all and, any not being empty, one
// of any (rule 3 of Apply). Malformed JSON holds no permission.
func permitted(stored *string, all, any []Permission) bool {
	if len(all) == 0 && len(any) == 0 {
		return true
	}
	var held map[string][]string
	if stored != nil && *stored != "" {
		if json.Unmarshal([]byte(*stored), &held) != nil {
			held = nil
		}
	}
	has := func(p Permission) bool { return slices.Contains(held[p.Resource], p.Action) }
	for _, p := range all {
		if !has(p) {
			return false
		}
	}
	if len(any) == 0 {
		return true
	}
	return slices.ContainsFunc(any, has)
}

// limitCheck is a named limit as a verification decides on it: what it
// spends, and the limit's state as read (present false: the key has no
// limit of that name).
type limitCheck struct {
	LimitSpend
	owner                     bool // the owner's limit, shared by their keys
	present                   bool
	max, window, count, start int64 // start: epoch ms, 0 for none
}

// limitsOf pairs what spend spends with the limits k holds and then, when
// owner is not nil, with the owner's, returning the counters decoded from
// each record; nothing when spend is empty.
func limitsOf(k, owner *Key, spend []LimitSpend) (lims []limitCheck, counts, ownerCounts map[string]LimitCount) {
	if len(spend) == 0 {
		return nil, nil, nil
	}
	counts = k.LimitCounters()
	lims = limitChecks(k.LimitConfigs(), counts, spend, false)
	if owner != nil {
		ownerCounts = owner.LimitCounters()
		lims = append(lims, limitChecks(owner.LimitConfigs(), ownerCounts, spend, true)...)
	}
	return lims, counts, ownerCounts
}

// limitChecks pairs what a verification spends with the limits stored.
func limitChecks(cfg map[string]LimitConfig, counts map[string]LimitCount, spend []LimitSpend, owner bool) []limitCheck {
	out := make([]limitCheck, len(spend))
	for i, sp := range spend {
		out[i].LimitSpend, out[i].owner = sp, owner
		if l, ok := cfg[sp.Name]; ok {
			c := counts[sp.Name]
			out[i].present, out[i].max, out[i].window, out[i].count, out[i].start = true, l.Max, l.Window, c.Count, c.Start
		}
	}
	return out
}

// decideLimits applies rule 5b of Apply to lims, in order: the denial, or
// the bit set of the limits whose window the verification opens (the
// others present are added to).
func decideLimits(lims []limitCheck, now int64) (p Plan) {
	for i, l := range lims {
		if !l.present {
			continue
		}
		need := max(l.Cost, 1)
		switch {
		case l.start == 0 || l.start <= now-l.window:
			if need > l.max {
				return Plan{Code: RateLimited, TryAgainIn: l.window, Limit: l.Name, OwnerLimit: l.owner}
			}
			p.Opens |= 1 << i
		case l.count > l.max-need:
			return Plan{Code: RateLimited, TryAgainIn: l.start + l.window - now, Limit: l.Name, OwnerLimit: l.owner}
		}
	}
	return p
}

// applyLimits performs the steps decided on lims on the stored counters
// (bit i of opens: lims[i] opens a new window), as the database's guarded
// writes do on their rows: a window opened counts cost from now, an open
// one adds cost; a cost of 0 changes nothing. It reports whether a counter
// changed.
func applyLimits(counts map[string]LimitCount, lims []limitCheck, opens uint32, now int64) (map[string]LimitCount, bool) {
	changed := false
	for i, l := range lims {
		if !l.present || l.Cost == 0 {
			continue
		}
		if counts == nil {
			counts = map[string]LimitCount{}
		}
		c := counts[l.Name]
		if opens&(1<<i) != 0 {
			c.Count, c.Start = l.Cost, now
		} else {
			c.Count += l.Cost
		}
		counts[l.Name], changed = c, true
	}
	return counts, changed
}
