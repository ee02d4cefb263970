package apikey

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// NamedLimit is one of a key's named rate limits, such as "requests" or
// "tokens": at most Max units in a fixed window of Window that opens at
// its first use, as [RateLimit]. A verification spends a named limit only
// when it names it with [LimitCost], with the cost it gives.
type NamedLimit struct {
	Max    int64
	Window time.Duration // a positive whole number of milliseconds
}

// LimitUsage is a named limit with its counter, as [Key.Limits] holds it.
type LimitUsage struct {
	NamedLimit
	Count       int64     // units counted in the current window
	WindowStart time.Time // the start of the current window; zero: none yet
}

// MaxLimits bounds how many named limits a key carries, and how many one
// verification names.
const MaxLimits = 16

// MaxLimitNameLength bounds a named limit's name, in bytes.
const MaxLimitNameLength = 64

// checkLimitName accepts 1 to MaxLimitNameLength letters, digits, '_', '-'
// or '.': names that every store keeps byte for byte.
func checkLimitName(n string) error {
	if n == "" || len(n) > MaxLimitNameLength {
		return invalidf("limit name %q must be 1 to %d bytes", n, MaxLimitNameLength)
	}
	for _, c := range []byte(n) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return invalidf("limit name %q may hold only letters, digits, '_', '-' and '.'", n)
		}
	}
	return nil
}

// checkLimits validates a key's named limits.
func checkLimits(m map[string]NamedLimit) error {
	if len(m) > MaxLimits {
		return invalidf("Limits: %d named limits; at most %d", len(m), MaxLimits)
	}
	for name, l := range m {
		if err := checkLimitName(name); err != nil {
			return err
		}
		switch {
		case l.Max < 0:
			return invalidf("Limits[%q].Max %d is negative", name, l.Max)
		case l.Window < time.Millisecond || l.Window%time.Millisecond != 0:
			return invalidf("Limits[%q].Window %v must be a positive whole number of milliseconds", name, l.Window)
		}
	}
	return nil
}

// LimitSpend is a named limit a verification spends, and how much (see
// [LimitCost]).
type LimitSpend struct {
	Name string
	Cost int64
}

// LimitCost makes the verification spend cost units of the key's named
// limit name, in the same atomic step as the rest of the verification: a
// limit without room denies it with [CodeRateLimited] (Result.Limit names
// the limit), and then nothing is spent anywhere. A key without a limit of
// that name is not limited by it. Cost 0 checks that one unit is left
// without spending it. Name a limit once per verification, and at most
// [MaxLimits] of them.
func LimitCost(name string, cost int64) VerifyOption {
	err := checkLimitName(name)
	if err == nil && cost < 0 {
		err = invalidf("LimitCost(%q): cost %d is negative", name, cost)
	}
	return func(o *verifyOptions) {
		if err != nil {
			o.err = cmp.Or(o.err, err)
			return
		}
		if slices.ContainsFunc(o.limits, func(l LimitSpend) bool { return l.Name == name }) {
			o.err = cmp.Or(o.err, invalidf("LimitCost(%q) given twice", name))
			return
		}
		if len(o.limits) == MaxLimits {
			o.err = cmp.Or(o.err, invalidf("more than %d LimitCost options", MaxLimits))
			return
		}
		o.limits = append(o.limits, LimitSpend{name, cost})
		// In name order, the order in which the database locks the rows.
		slices.SortFunc(o.limits, func(a, b LimitSpend) int { return cmp.Compare(a.Name, b.Name) })
	}
}

// limitCheck is a named limit as a verification decides on it: what it
// spends, and the limit's state as read (present false: the key has no
// limit of that name).
type limitCheck struct {
	LimitSpend
	owner                     bool   // the owner's limit, shared by their keys
	row                       string // in the database, the key of the limit's row
	present                   bool
	max, window, count, start int64 // start: epoch ms, 0 for none
}

// decideLimits applies rule 5b of ApplyClaim to lims, in order: the
// denial, or the bit set of the limits whose window the verification
// opens (the others present are incremented).
func decideLimits(lims []limitCheck, now int64) (p plan) {
	for i, l := range lims {
		if !l.present {
			continue
		}
		need := max(l.Cost, 1)
		switch {
		case l.start == 0 || l.start <= now-l.window:
			if need > l.max {
				return plan{code: CodeRateLimited, tryAgainIn: l.window, limit: l.Name, limitOwner: l.owner}
			}
			p.limitReset |= 1 << i
		case l.count > l.max-need:
			return plan{code: CodeRateLimited, tryAgainIn: l.start + l.window - now, limit: l.Name, limitOwner: l.owner}
		}
	}
	return p
}

// limitRowKey is the unique key of the row of a key's named limit, and
// ownerRowKey, given the owner's Hash, that of an owner's: the hash keeps
// it short, and "o" sorts after every digit, so a verification locks its
// key's limits before its owner's.
func limitRowKey(id int64, name string) string  { return strconv.FormatInt(id, 10) + ":" + name }
func ownerRowKey(ownerHash, name string) string { return "o:" + ownerHash + ":" + name }

// limitConfig is a named limit in a stored key's Limits JSON text, and
// limitCount its counter in LimitCounts: a claim writes only the counters,
// an update only the limits, so neither undoes the other. Fields are in
// name order, as a Lua script writes them back.
type limitConfig struct {
	Max    int64 `json:"max"`
	Window int64 `json:"window"` // ms
}

type limitCount struct {
	Count int64 `json:"count"`
	Start int64 `json:"start"` // epoch ms, 0 for none
}

// decodeMap decodes JSON text into a map; nil or malformed text holds
// nothing.
func decodeMap[V any](text *string) map[string]V {
	if text == nil || *text == "" {
		return nil // before m, whose address escapes: no allocation for no text
	}
	var m map[string]V
	if json.Unmarshal([]byte(*text), &m) != nil {
		return nil
	}
	return m
}

// encodeMap is the JSON text of m, nil when it is empty.
func encodeMap[V any](m map[string]V) *string {
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m) // of int64 fields: cannot fail
	return ptr(string(b))
}

// limitChecks pairs what a verification spends with the limits stored.
func limitChecks(cfg map[string]limitConfig, counts map[string]limitCount, spend []LimitSpend, owner bool) []limitCheck {
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

// applyLimits performs the steps decided on lims on the stored counters
// (bit i of reset: lims[i] opens a new window), as the
// database's guarded writes do on their rows: a window opened counts cost
// from now, an open one adds cost; a cost of 0 changes nothing. It
// reports whether a counter changed.
func applyLimits(counts map[string]limitCount, lims []limitCheck, reset uint32, now int64) (map[string]limitCount, bool) {
	changed := false
	for i, l := range lims {
		if !l.present || l.Cost == 0 {
			continue
		}
		if counts == nil {
			counts = map[string]limitCount{}
		}
		c := counts[l.Name]
		if reset&(1<<i) != 0 {
			c.Count, c.Start = l.Cost, now
		} else {
			c.Count += l.Cost
		}
		counts[l.Name], changed = c, true
	}
	return counts, changed
}

// usage is the key's named limits with their counters, as Key.Limits.
func (s *StoredKey) usage() map[string]LimitUsage {
	cfg := decodeMap[limitConfig](s.Limits)
	if len(cfg) == 0 {
		return nil
	}
	counts := decodeMap[limitCount](s.LimitCounts)
	out := make(map[string]LimitUsage, len(cfg))
	for name, l := range cfg {
		u := LimitUsage{NamedLimit: NamedLimit{Max: l.Max, Window: time.Duration(l.Window) * time.Millisecond}}
		if c, ok := counts[name]; ok {
			u.Count = c.Count
			if c.Start != 0 {
				u.WindowStart = time.UnixMilli(c.Start).UTC()
			}
		}
		out[name] = u
	}
	return out
}

// configText is the stored Limits text of limits, nil for none.
func configText(limits map[string]NamedLimit) *string {
	cfg := make(map[string]limitConfig, len(limits))
	for name, l := range limits {
		cfg[name] = limitConfig{Max: l.Max, Window: l.Window.Milliseconds()}
	}
	return encodeMap(cfg)
}

// named keeps of limits those that spend names, as a verification's
// Key.Limits holds them.
func named(limits map[string]LimitUsage, spend []LimitSpend) map[string]LimitUsage {
	if len(limits) == 0 {
		return nil
	}
	var out map[string]LimitUsage
	for _, sp := range spend {
		if u, ok := limits[sp.Name]; ok {
			if out == nil {
				out = make(map[string]LimitUsage, len(spend))
			}
			out[sp.Name] = u
		}
	}
	return out
}
