package ratelimit

import (
	"context"
	"time"
)

// RollingCalendar is s deciding a calendar rule as a window of the current
// period's length opened by a key's first request: the naive calendar
// window, which does not end at the period's boundary. The boundary race
// tests must catch it.
func RollingCalendar(s Storage) Storage { return rollingCalendar{s} }

type rollingCalendar struct{ Storage }

func rollingRule(rule Rule, now int64) Rule {
	if rule.Calendar == 0 {
		return rule
	}
	return Rule{Window: time.Duration(rule.frame(now).w) * time.Millisecond, Max: rule.Max}
}

func (r rollingCalendar) consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, attempts int) (state, error) {
	return r.Storage.consume(ctx, key, rollingRule(rule, now), cost, now, m, attempts)
}

func (r rollingCalendar) peek(ctx context.Context, key string, rule Rule, now int64, m Mode) (state, error) {
	return r.Storage.peek(ctx, key, rollingRule(rule, now), now, m)
}
