package sluiceotel_test

import (
	"context"
	"fmt"
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

// observedLimiter is a Memory limiter whose decisions a RateLimitObserver
// records in the returned telemetry.
func observedLimiter(t *testing.T) (*telemetry, *ratelimit.Limiter) {
	t.Helper()
	tel := newTelemetry(t)
	observe, err := sluiceotel.RateLimitObserver(tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ratelimit.New(ratelimit.Memory(100), ratelimit.WithObserver(observe))
	if err != nil {
		t.Fatal(err)
	}
	return tel, l
}

// A shadow rule's would-deny is counted with sluice.outcome "shadow",
// sluice.ratelimit.shadow true and the rule's name.
func TestRateLimitShadowAttribute(t *testing.T) {
	ctx := context.Background()
	tel, l := observedLimiter(t)
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

// A policy's decision names its binding rule, and a shadow rule that
// would deny is reported as the lone rule's is.
func TestRateLimitPolicyAttributes(t *testing.T) {
	ctx := context.Background()
	tel, l := observedLimiter(t)
	p := ratelimit.Policy{{Name: "burst", Window: time.Minute, Max: 2}, {Name: "new", Window: time.Minute, Max: 1, Shadow: true}}
	var outcomes []string
	for range 3 {
		d, err := l.ConsumePolicy(ctx, "k", p, 1)
		if err != nil {
			t.Fatal(err)
		}
		outcomes = append(outcomes, ratelimit.Event{Decision: d}.Outcome())
	}
	if fmt.Sprint(outcomes) != "[allowed shadow denied]" {
		t.Fatalf("outcomes %v", outcomes)
	}
	base := []attribute.KeyValue{attribute.String("sluice.ratelimit.mode", "FixedWindow"), attribute.String("sluice.ratelimit.rule", "2-M"),
		attribute.String("sluice.ratelimit.rule.name", "burst"), attribute.String("sluice.storage", "memory")}
	got := decisionPoints(t, tel)
	for _, want := range []attribute.Set{
		set(append(base, attribute.String("sluice.outcome", "allowed"), attribute.Bool("sluice.ratelimit.shadow", false))...),
		set(append(base, attribute.String("sluice.outcome", "shadow"), attribute.Bool("sluice.ratelimit.shadow", true))...),
		set(append(base, attribute.String("sluice.outcome", "denied"), attribute.Bool("sluice.ratelimit.shadow", false))...),
	} {
		if p, ok := got[want.Equivalent()]; !ok || p.Value != 1 {
			t.Errorf("no point %v in %v", want, got)
		}
	}
}
