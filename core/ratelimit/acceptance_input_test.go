package ratelimit_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/internal/testclock"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// Acceptance probes (qa): bad input to the policy, calendar and lease
// features is an error wrapping core.ErrInvalid that names what is wrong,
// decided before any I/O, on every storage.

// untouched fails t unless every rule of p on key still has its whole
// budget: a bad request before it wrote nothing.
func untouched(t *testing.T, l *ratelimit.Limiter, key string, p ratelimit.Policy) {
	t.Helper()
	d, err := l.CheckPolicy(context.Background(), key, p)
	if err != nil {
		t.Fatalf("CheckPolicy: %v", err)
	}
	for _, r := range d.Rules {
		if r.Remaining != r.Limit {
			t.Errorf("rule %q: remaining %d of %d after a refused request: it was charged", r.Name, r.Remaining, r.Limit)
		}
	}
}

func TestAcceptancePolicyBadInputBeforeAnyWrite(t *testing.T) {
	ok := ratelimit.Rule{Name: "a", Window: time.Minute, Max: 5}
	good := ratelimit.Policy{ok, {Name: "b", Window: time.Hour, Max: 50}}
	cases := []struct {
		name string
		p    ratelimit.Policy
		key  string
		cost int64
		want string // a word the error must hold
	}{
		{"empty policy", ratelimit.Policy{}, "k", 1, "empty"},
		{"nil policy", nil, "k", 1, "empty"},
		{"unnamed rule", ratelimit.Policy{ok, {Window: time.Minute, Max: 5}}, "k", 1, "name"},
		{"duplicate names", ratelimit.Policy{ok, {Name: "a", Window: time.Hour, Max: 50}}, "k", 1, `"a"`},
		{"name with the separator", ratelimit.Policy{ok, {Name: "x#:y", Window: time.Hour, Max: 5}}, "k", 1, "name"},
		{"name with a brace", ratelimit.Policy{ok, {Name: "x}", Window: time.Hour, Max: 5}}, "k", 1, "name"},
		{"name too long", ratelimit.Policy{ok, {Name: strings.Repeat("n", ratelimit.MaxRuleNameLength+1), Window: time.Hour, Max: 5}}, "k", 1, "name"},
		{"negative max", ratelimit.Policy{ok, {Name: "b", Window: time.Hour, Max: -1}}, "k", 1, "b"},
		{"no window", ratelimit.Policy{ok, {Name: "b", Max: 5}}, "k", 1, "b"},
		{"calendar with a window", ratelimit.Policy{ok, {Name: "b", Window: time.Hour, Max: 5, Calendar: ratelimit.Day}}, "k", 1, "b"},
		{"unknown calendar", ratelimit.Policy{ok, {Name: "b", Max: 5, Calendar: ratelimit.Calendar(200)}}, "k", 1, "b"},
		{"negative cost", good, "k", -1, "cost"},
		{"min int cost", good, "k", math.MinInt64, "cost"},
		{"empty key", good, "", 1, "key"},
		{"invalid UTF-8 key", good, "k\xff", 1, "UTF-8"},
		{"NUL in key", good, "k\x00", 1, "NUL"},
	}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithFailOpen())
		for _, tc := range cases {
			before := b.calls()
			d, err := l.ConsumePolicy(context.Background(), tc.key, tc.p, tc.cost)
			if !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%s: err = %v, want core.ErrInvalid", tc.name, err)
				continue
			}
			if d.Allowed {
				t.Errorf("%s: bad input admitted with WithFailOpen: %+v", tc.name, d)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %q does not name %q", tc.name, err, tc.want)
			}
			if n := b.calls() - before; n != 0 {
				t.Errorf("%s: %d storage calls before the refusal", tc.name, n)
			}
			if _, err := l.CheckPolicy(context.Background(), tc.key, tc.p); tc.cost >= 0 && !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%s: CheckPolicy err = %v, want core.ErrInvalid", tc.name, err)
			}
			if err := l.CheckPolicyRules(tc.p); tc.cost >= 0 && tc.key == "k" && !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%s: CheckPolicyRules err = %v, want core.ErrInvalid", tc.name, err)
			}
		}
		untouched(t, l, "k", good)
	})
}

// A cost the rules cannot hold (MaxInt64) is a denial charging nothing,
// never an overflow that admits, and a shadow rule's would-deny never
// turns into a charge of the others.
func TestAcceptancePolicyHugeCostChargesNothing(t *testing.T) {
	p := ratelimit.Policy{
		{Name: "burst", Window: time.Second, Max: 10},
		{Name: "daily", Window: 24 * time.Hour, Max: math.MaxInt64},
		{Name: "probe", Window: time.Minute, Max: 3, Shadow: true},
	}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithFailOpen(), ratelimit.WithDenialCache(64))
		ctx := context.Background()
		for _, cost := range []int64{math.MaxInt64, math.MaxInt64 - 1, 11, 1 << 62} {
			d, err := l.ConsumePolicy(ctx, "huge", p, cost)
			if err != nil {
				t.Fatalf("cost %d: %v", cost, err)
			}
			if d.Allowed || d.DeniedBy != "burst" {
				t.Fatalf("cost %d: %+v, want denied by burst", cost, d)
			}
		}
		untouched(t, l, "huge", p)
		// the daily rule alone with MaxInt64: one unit fits, then its
		// remaining is MaxInt64-1, no overflow
		d, err := l.ConsumePolicy(ctx, "huge", p[1:2], math.MaxInt64)
		if err != nil || !d.Allowed || d.Remaining != 0 {
			t.Fatalf("MaxInt64 of MaxInt64: %+v, %v", d, err)
		}
		d, err = l.ConsumePolicy(ctx, "huge", p[1:2], 1)
		if err != nil || d.Allowed {
			t.Fatalf("one past MaxInt64: %+v, %v; want denied", d, err)
		}
	})
}

// Storage names are injective over SafeKey keys and valid rule names: no
// (key, rule) pair of a policy shares a counter with another pair, nor
// with a lone rule's key built by SafeKey, however the key is crafted.
func TestAcceptancePolicyKeysNeverCollide(t *testing.T) {
	long := strings.Repeat("k", 300)
	pairs := []struct{ key, name string }{
		{"a", "x"},
		{"a}#:x", "y"},
		{"a", "x.y"},
		{"{a}", "x"},
		{ratelimit.SafeKey("a}#:x"), "x"},
		{ratelimit.SafeKey("{a}#:x"), "x"},
		{ratelimit.SafeKey(long), "x"},
		{ratelimit.SafeKey(long + "1"), "x"},
		{ratelimit.SafeKey(long)[:200], "x"},
		{"}x", "x"},
		{"}x}", "x"},
		{"#=", "x"},
		{"{" + long + "}", "x"},
		{"{" + long + "}1", "x"},
	}
	lone := []string{"a", ratelimit.SafeKey("{a}#:x"), ratelimit.SafeKey("{a}#:x.y")}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now))
		ctx := context.Background()
		rule := ratelimit.Rule{Window: time.Minute, Max: 1}
		for _, pr := range pairs {
			r := rule
			r.Name = pr.name
			d, err := l.ConsumePolicy(ctx, pr.key, ratelimit.Policy{r}, 1)
			if err != nil {
				t.Fatalf("%q/%q: %v", pr.key, pr.name, err)
			}
			if !d.Allowed {
				t.Errorf("key %q rule %q denied on its first request: it shares a counter with an earlier pair", pr.key, pr.name)
			}
		}
		for _, k := range lone {
			d, err := l.Consume(ctx, k, rule)
			if err != nil {
				t.Fatalf("%q: %v", k, err)
			}
			if !d.Allowed {
				t.Errorf("lone key %q denied on its first request: it shares a policy's counter", k)
			}
		}
	})
}

// Calendar rules at the edges of time: a clock before the epoch, at year
// 1 and far in the future still decides exactly (Max per period), or
// refuses as bad input; it never admits past Max nor panics.
func TestAcceptanceCalendarExtremeDates(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	instants := []time.Time{
		time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC),
		time.Date(1900, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2262, 4, 11, 0, 0, 0, 0, time.UTC),
	}
	rule := ratelimit.Rule{Name: "month", Max: 2, Calendar: ratelimit.Month, Location: berlin}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, at := range instants {
				now := at
				l := newLimiter(t, b.storage(newClock()), ratelimit.WithClock(func() time.Time { return now }))
				ctx := context.Background()
				key := "cal" + at.Format("20060102")
				admitted := 0
				for range 4 {
					d, err := l.ConsumePolicy(ctx, key, ratelimit.Policy{rule, {Name: "s", Window: time.Second, Max: 100}}, 1)
					if errors.Is(err, core.ErrInvalid) {
						break // refused as bad input: fine
					}
					if err != nil {
						t.Fatalf("%v: %v", at, err)
					}
					if d.Allowed {
						admitted++
						if !d.Rules[0].Reset.After(at) {
							t.Errorf("%v: the month's reset %v is not after now", at, d.Rules[0].Reset)
						}
					}
				}
				if admitted > 2 {
					t.Errorf("%v: %d admitted in one month of Max 2", at, admitted)
				}
			}
		})
	}
}

// Leases: a size of 0 or less is refused by New; a rule whose Max is below
// the size, or a calendar rule, is refused before any write; a policy is
// decided exactly or refused, never over its rules.
func TestAcceptanceLeaseBadInput(t *testing.T) {
	_, db := memoryDB(t)
	for _, size := range []int64{0, -1, math.MinInt64} {
		if _, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithLeases(size)); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("WithLeases(%d): err = %v, want core.ErrInvalid", size, err)
		}
	}
	c := newClock()
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithLeases(8), ratelimit.WithFailOpen())
	ctx := context.Background()
	for _, r := range []ratelimit.Rule{
		{Window: time.Minute, Max: 7},
		{Max: 100, Calendar: ratelimit.Day},
	} {
		d, err := l.Consume(ctx, "lk", r)
		if !errors.Is(err, core.ErrInvalid) || d.Allowed {
			t.Errorf("rule %v under WithLeases(8): %+v, %v; want refused with core.ErrInvalid", r, d, err)
		}
	}
	plain := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now))
	if d, err := plain.Check(ctx, "lk", ratelimit.Rule{Window: time.Minute, Max: 7}); err != nil || d.Remaining != 7 {
		t.Errorf("after the refusals: %+v, %v; want nothing stored", d, err)
	}
	// a policy under leases: exact (Max per rule) or refused
	p := ratelimit.Policy{{Name: "a", Window: time.Minute, Max: 16}, {Name: "b", Window: time.Hour, Max: 20}}
	admitted := 0
	for range 30 {
		d, err := l.ConsumePolicy(ctx, "lp", p, 1)
		if errors.Is(err, core.ErrInvalid) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 16 {
		t.Errorf("policy under leases admitted %d, want 16", admitted)
	}
}

// memoryDB is a fresh core.DB over core/memory.
func memoryDB(t *testing.T) (*memory.Memory, *core.DB) {
	t.Helper()
	m := memory.New()
	db, err := core.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return m, db
}

// ParseRule refuses what a configuration file can get wrong about a
// calendar rule, naming it, with core.ErrInvalid.
func TestAcceptanceParseCalendarBadInput(t *testing.T) {
	for in, want := range map[string]string{
		"1000/day@Mars/Olympus":    "Mars/Olympus",
		"1000/day@":                "",
		"1000/fortnight":           "fortnight",
		"-1/day":                   "-1",
		"1000/month@Europe/Berl1n": "Europe/Berl1n",
		"99999999999999999999/day": "99999999999999999999",
	} {
		r, err := ratelimit.ParseRule(in)
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRule(%q) = %v, %v; want core.ErrInvalid naming %q", in, r, err, want)
		}
	}
	r, err := ratelimit.ParseRule("1000/day@Europe/Berlin")
	if err != nil || r.Calendar != ratelimit.Day || r.Location == nil || r.Location.String() != "Europe/Berlin" || r.Max != 1000 {
		t.Errorf("ParseRule of a good calendar rule: %+v, %v", r, err)
	}
}

// A calendar rule in time.Local counts the days of each process's own
// zone (its TZ): two processes in different zones would each reset the
// shared counter at their own midnight, so a day admits up to twice its
// Max. It is refused, as bad input, before any write: by Validate, by
// every decision, by CheckRule and by ParseRule's "@Local".
func TestAcceptanceCalendarInLocalRefused(t *testing.T) {
	local := ratelimit.Rule{Max: 5, Calendar: ratelimit.Day, Location: time.Local}
	if err := local.Validate(); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "Local") {
		t.Errorf("Validate of a rule in time.Local = %v; want core.ErrInvalid naming Local", err)
	}
	if r, err := ratelimit.ParseRule("1000/day@Local"); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "Local") {
		t.Errorf(`ParseRule("1000/day@Local") = %+v, %v; want core.ErrInvalid naming Local`, r, err)
	}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithFailOpen())
		ctx := context.Background()
		if err := l.CheckRule(local); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("CheckRule = %v; want core.ErrInvalid", err)
		}
		if d, err := l.Consume(ctx, "tz", local); !errors.Is(err, core.ErrInvalid) || d.Allowed {
			t.Errorf("Consume = %+v, %v; want denied with core.ErrInvalid, whatever the failure policy", d, err)
		}
		p := ratelimit.Policy{{Name: "burst", Window: time.Minute, Max: 5}, {Name: "daily", Max: 50, Calendar: ratelimit.Day, Location: time.Local}}
		if d, err := l.ConsumePolicy(ctx, "tz", p, 1); !errors.Is(err, core.ErrInvalid) || d.Allowed {
			t.Errorf("ConsumePolicy = %+v, %v; want denied with core.ErrInvalid", d, err)
		}
		untouched(t, l, "tz", p[:1])
		// UTC, and a zone loaded by name, stay valid
		for _, loc := range []*time.Location{nil, time.UTC, testclock.Zone(t, "Europe/Berlin")} {
			if _, err := l.Consume(ctx, "tz-ok", ratelimit.Rule{Max: 5, Calendar: ratelimit.Day, Location: loc}); err != nil {
				t.Errorf("a day in %v: %v", loc, err)
			}
		}
	})
}

// Antarctica/Troll shifts its clocks by two hours, so its day of 27
// October 2024 lasts 26 hours, past Day.Longest()'s 25. A limiter whose
// longest window is declared as Day.Longest() pruned that day's row in
// its 26th hour, while the day still counted, and its Max was admitted
// again. A calendar rule whose zone makes periods longer than the declared
// longest window is refused; declared long enough, Prune keeps the row.
func TestAcceptanceCalendarLongestInTwoHourDSTZone(t *testing.T) {
	troll := testclock.Zone(t, "Antarctica/Troll")
	day := ratelimit.Rule{Max: 3, Calendar: ratelimit.Day, Location: troll}
	start, end := ratelimit.Day.Period(time.Date(2024, 10, 27, 12, 0, 0, 0, time.UTC), troll)
	if end.Sub(start) != 26*time.Hour {
		t.Fatalf("the day of 27 October 2024 in Troll lasts %v; this test needs 26h", end.Sub(start))
	}
	ctx := context.Background()
	_, db := memoryDB(t)
	_, other := memoryDB(t)
	c := newClock()
	short := newLimiter(t, ratelimit.Database(other), ratelimit.WithClock(c.Now), ratelimit.WithLongestWindow(ratelimit.Day.Longest()))
	if err := short.CheckRule(day); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("CheckRule of a Troll day under WithLongestWindow(%v) = %v; want core.ErrInvalid", ratelimit.Day.Longest(), err)
	}
	c.Clock.Set(start.Add(30 * time.Minute))
	if d, err := short.Consume(ctx, "troll", day); !errors.Is(err, core.ErrInvalid) || d.Allowed {
		t.Errorf("Consume of a Troll day under WithLongestWindow(%v) = %+v, %v; want denied with core.ErrInvalid", ratelimit.Day.Longest(), d, err)
	}
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithLongestWindow(26*time.Hour))
	for i := range 3 {
		if d, err := l.Consume(ctx, "troll", day); err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
	}
	c.Clock.Set(start.Add(25*time.Hour + 30*time.Minute)) // the day's 26th hour
	if _, err := l.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := l.Consume(ctx, "troll", day); err != nil || d.Allowed {
		t.Errorf("a fourth request in the day's 26th hour, after Prune: %+v, %v; want denied (Max 3)", d, err)
	}
}
