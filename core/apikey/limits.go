package apikey

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
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

// checkLimitName accepts 1 to MaxLimitNameLength letters, digits, '_', '-'
// or '.': names that every store keeps byte for byte.
func checkLimitName(n string) error {
	if err := checkText("limit name", n); err != nil {
		return err
	}
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
		if slices.ContainsFunc(o.limits, func(l keystore.LimitSpend) bool { return l.Name == name }) {
			o.err = cmp.Or(o.err, invalidf("LimitCost(%q) given twice", name))
			return
		}
		if len(o.limits) == MaxLimits {
			o.err = cmp.Or(o.err, invalidf("more than %d LimitCost options", MaxLimits))
			return
		}
		o.limits = append(o.limits, keystore.LimitSpend{Name: name, Cost: cost})
		// In name order, the order in which the database locks the rows.
		slices.SortFunc(o.limits, func(a, b keystore.LimitSpend) int { return cmp.Compare(a.Name, b.Name) })
	}
}

// limitRowKey is the unique key of the row of a key's named limit, and
// ownerRowKey, given the owner's Hash, that of an owner's: the hash keeps
// it short, and "o" sorts after every digit, so a verification locks its
// key's limits before its owner's.
func limitRowKey(id int64, name string) string  { return strconv.FormatInt(id, 10) + ":" + name }
func ownerRowKey(ownerHash, name string) string { return "o:" + ownerHash + ":" + name }

// configText is the stored Limits text of limits, nil for none.
func configText(limits map[string]NamedLimit) *string {
	cfg := make(map[string]keystore.LimitConfig, len(limits))
	for name, l := range limits {
		cfg[name] = keystore.LimitConfig{Max: l.Max, Window: l.Window.Milliseconds()}
	}
	var s keystore.Key
	s.SetLimitConfigs(cfg)
	return s.Limits
}

// named keeps of limits those that spend names, as a verification's
// Key.Limits holds them.
func named(limits map[string]LimitUsage, spend []keystore.LimitSpend) map[string]LimitUsage {
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
