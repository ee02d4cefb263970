package sluiceotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/sluice/core/ratelimit"
	sluiceotel "github.com/sluice-go/sluice/observe/otel"
)

// decisionPoints are the sluice.ratelimit.decisions points recorded, by
// their attribute sets.
func decisionPoints(t *testing.T, tel *telemetry) map[attribute.Distinct]metricdata.DataPoint[int64] {
	t.Helper()
	out := map[attribute.Distinct]metricdata.DataPoint[int64]{}
	for _, p := range tel.metrics(t)["sluice.ratelimit.decisions"].Data.(metricdata.Sum[int64]).DataPoints {
		out[p.Attributes.Equivalent()] = p
	}
	return out
}

// A shadow rule's would-deny is counted with sluice.outcome "shadow",
// sluice.ratelimit.shadow true and the rule's name.
func TestRateLimitShadowAttribute(t *testing.T) {
	ctx := context.Background()
	tel := newTelemetry(t)
	observe, err := sluiceotel.RateLimitObserver(tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ratelimit.New(ratelimit.Memory(100), ratelimit.WithObserver(observe))
	if err != nil {
		t.Fatal(err)
	}
	rule := ratelimit.Rule{Name: "new", Window: time.Minute, Max: 1, Shadow: true}
	for range 3 {
		if d, err := l.Consume(ctx, "k", rule); err != nil || !d.Allowed {
			t.Fatalf("shadow rule: %+v, %v", d, err)
		}
	}
	base := []attribute.KeyValue{attribute.String("sluice.ratelimit.mode", "FixedWindow"), attribute.String("sluice.ratelimit.rule", "1-M"),
		attribute.String("sluice.ratelimit.rule.name", "new"), attribute.String("sluice.storage", "memory")}
	allowed := set(append(base, attribute.String("sluice.outcome", "allowed"), attribute.Bool("sluice.ratelimit.shadow", false))...)
	shadow := set(append(base, attribute.String("sluice.outcome", "shadow"), attribute.Bool("sluice.ratelimit.shadow", true))...)
	got := decisionPoints(t, tel)
	if len(got) != 2 || got[allowed.Equivalent()].Value != 1 || got[shadow.Equivalent()].Value != 2 {
		t.Errorf("points %v; want allowed 1 and shadow 2", got)
	}
}

// A policy's decision names its binding rule: the one that denied, or
// the one whose figures the decision reports.
func TestRateLimitBindingRuleName(t *testing.T) {
	tel := newTelemetry(t)
	observe, err := sluiceotel.RateLimitObserver(tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	reset := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	rules := []ratelimit.RuleDecision{
		{Name: "burst", Allowed: true, Limit: 10, Remaining: 9, Reset: reset},
		{Name: "daily", Allowed: true, Limit: 1000, Remaining: 5, Reset: reset.Add(time.Hour)},
		{Name: "new", Shadow: true, Limit: 1, Remaining: 0, Reset: reset},
	}
	admitted := ratelimit.Decision{Allowed: true, WouldDeny: true, Limit: 1000, Remaining: 5, Reset: reset.Add(time.Hour), Rules: rules}
	denied := ratelimit.Decision{Limit: 10, DeniedBy: "burst", Reset: reset, RetryAfter: time.Second, Rules: rules}
	observe(context.Background(), ratelimit.Event{Key: "k", Cost: 1, Storage: "memory", Decision: admitted})
	observe(context.Background(), ratelimit.Event{Key: "k", Cost: 1, Storage: "memory", Decision: denied})
	base := []attribute.KeyValue{attribute.String("sluice.ratelimit.mode", "FixedWindow"), attribute.String("sluice.ratelimit.rule", "0/0s"),
		attribute.String("sluice.storage", "memory")}
	wantAdmitted := set(append(base, attribute.String("sluice.outcome", "shadow"), attribute.Bool("sluice.ratelimit.shadow", true),
		attribute.String("sluice.ratelimit.rule.name", "daily"))...)
	wantDenied := set(append(base, attribute.String("sluice.outcome", "denied"), attribute.Bool("sluice.ratelimit.shadow", false),
		attribute.String("sluice.ratelimit.rule.name", "burst"))...)
	got := decisionPoints(t, tel)
	if _, ok := got[wantAdmitted.Equivalent()]; !ok || len(got) != 2 {
		t.Errorf("points %v; want one admitted by daily's figures", got)
	}
	if _, ok := got[wantDenied.Equivalent()]; !ok {
		t.Errorf("points %v; want one denied by burst", got)
	}
}
