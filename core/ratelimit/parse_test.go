package ratelimit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

func TestParseRule(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ratelimit.Rule
	}{
		{"100-M", ratelimit.Rule{Window: time.Minute, Max: 100}},
		{"10-S", ratelimit.Rule{Window: time.Second, Max: 10}},
		{"1000-h", ratelimit.Rule{Window: time.Hour, Max: 1000}},
		{" 5 - D ", ratelimit.Rule{Window: 24 * time.Hour, Max: 5}},
		{"0-S", ratelimit.Rule{Window: time.Second, Max: 0}},
		{"5/30s", ratelimit.Rule{Window: 30 * time.Second, Max: 5}},
		{"7/1m30s", ratelimit.Rule{Window: 90 * time.Second, Max: 7}},
		{"3/250ms", ratelimit.Rule{Window: 250 * time.Millisecond, Max: 3}},
		{"unlimited", ratelimit.Unlimited},
		{"Unlimited", ratelimit.Unlimited},
	} {
		got, err := ratelimit.ParseRule(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestParseRuleRefusesWhatIsNotARule(t *testing.T) {
	for _, c := range []struct{ in, names string }{
		{"", "want a count and a window"},
		{"100", "want a count and a window"},
		{"100-", "want a count and a window"},
		{"-M", "want a count and a window"},
		{"x-M", `count "x"`},
		{"+5-M", `count "+5"`},
		{"99999999999999999999-M", "count"},
		{"100-W", `unit "W"`},
		{"100-MM", `unit "MM"`},
		{"5/30", `window "30"`},
		{"5/abc", `window "abc"`},
		{"5/0s", "must be positive"},
		{"5/-1s", "must be positive"},
		{"5/1500us", "whole number of milliseconds"},
	} {
		r, err := ratelimit.ParseRule(c.in)
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), c.names) || !strings.Contains(err.Error(), `"`+c.in+`"`) {
			t.Errorf("ParseRule(%q) = %+v, %v; want an ErrInvalid quoting the input and naming %q", c.in, r, err, c.names)
		}
	}
}

func TestRuleStringIsReadBack(t *testing.T) {
	for _, r := range []ratelimit.Rule{
		{Window: time.Minute, Max: 100},
		{Window: 24 * time.Hour, Max: 1},
		{Window: 90 * time.Second, Max: 7},
		{Window: 2 * time.Millisecond, Max: 0},
		ratelimit.Unlimited,
	} {
		s := r.String()
		back, err := ratelimit.ParseRule(s)
		if err != nil || back != r {
			t.Errorf("ParseRule(%+v.String() = %q) = %+v, %v", r, s, back, err)
		}
	}
	if s := (ratelimit.Rule{Window: time.Minute, Max: 100}).String(); s != "100-M" {
		t.Errorf("String() = %q, want 100-M", s)
	}
}
