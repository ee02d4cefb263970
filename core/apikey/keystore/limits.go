package keystore

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
