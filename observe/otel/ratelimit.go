package sluiceotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// RateLimitObserver returns an observer for ratelimit.WithObserver that
// records each decision: the metrics sluice.ratelimit.decisions,
// sluice.ratelimit.cost, sluice.ratelimit.decision.duration and
// sluice.ratelimit.decision.round_trips, and with [WithSpans] a span. See
// the package documentation for their units and attributes. Its error is
// an invalid option (wrapping core.ErrInvalid) or the meter's refusal of
// an instrument.
func RateLimitObserver(opts ...Option) (func(context.Context, ratelimit.Event), error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	meter := c.mp.Meter(ScopeName)
	r := &rateLimitRecorder{c: c, tracer: c.tp.Tracer(ScopeName)}
	if r.decisions, err = meter.Int64Counter("sluice.ratelimit.decisions",
		metric.WithUnit("{decision}"), metric.WithDescription("Rate-limit decisions, by outcome.")); err != nil {
		return nil, err
	}
	if r.cost, err = meter.Int64Counter("sluice.ratelimit.cost",
		metric.WithUnit("{unit}"), metric.WithDescription("Units the decisions asked for (0 for a Check).")); err != nil {
		return nil, err
	}
	if r.duration, err = meter.Float64Histogram("sluice.ratelimit.decision.duration",
		metric.WithUnit("s"), metric.WithDescription("How long a rate-limit decision took."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if r.roundTrips, err = meter.Int64Histogram("sluice.ratelimit.decision.round_trips",
		metric.WithUnit("{round_trip}"), metric.WithDescription("Statements or commands a rate-limit decision sent to its storage."),
		metric.WithExplicitBucketBoundaries(roundTripBuckets...)); err != nil {
		return nil, err
	}
	return r.observe, nil
}

type rateLimitRecorder struct {
	c          *config
	tracer     trace.Tracer
	decisions  metric.Int64Counter
	cost       metric.Int64Counter
	duration   metric.Float64Histogram
	roundTrips metric.Int64Histogram
	sets       attrCache[rateLimitLabels]
}

// rateLimitLabels are a decision's metric attributes.
type rateLimitLabels struct {
	outcome  string
	mode     ratelimit.Mode
	rule     ratelimit.Rule
	ruleName string
	shadow   bool
	storage  string
	errType  string
}

func (r *rateLimitRecorder) observe(ctx context.Context, e ratelimit.Event) {
	l := rateLimitLabels{outcome: e.Outcome(), mode: e.Mode, rule: e.Rule, ruleName: bindingName(e),
		shadow: e.Decision.WouldDeny, storage: e.Storage}
	if e.Err != nil {
		l.errType = errorType(e.Err)
	}
	a := r.sets.get(l, func() []attribute.KeyValue {
		kv := append(make([]attribute.KeyValue, 0, len(r.c.attrs)+7), r.c.attrs...)
		kv = append(kv, AttrOutcome.String(l.outcome), AttrMode.String(l.mode.String()),
			AttrRule.String(l.rule.String()), AttrRuleName.String(l.ruleName), AttrShadow.Bool(l.shadow), AttrStorage.String(l.storage))
		if l.errType != "" {
			kv = append(kv, AttrErrorType.String(l.errType))
		}
		return kv
	})
	r.decisions.Add(ctx, 1, a.opt)
	r.cost.Add(ctx, e.Cost, a.opt)
	r.duration.Record(ctx, e.Latency.Seconds(), a.opt)
	r.roundTrips.Record(ctx, e.RoundTrips, a.opt)

	if !r.c.spans || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	_, span := r.tracer.Start(ctx, "sluice.ratelimit.decision",
		trace.WithTimestamp(e.Start), trace.WithSpanKind(trace.SpanKindInternal))
	end := e.Start.Add(e.Latency)
	if span.IsRecording() {
		span.SetAttributes(a.set.ToSlice()...)
		span.SetAttributes(AttrCost.Int64(e.Cost), AttrRoundTrips.Int64(e.RoundTrips))
		if e.Err == nil {
			span.SetAttributes(AttrLimit.Int64(e.Decision.Limit), AttrRemaining.Int64(e.Decision.Remaining),
				AttrRetryAfter.Float64(e.Decision.RetryAfter.Seconds()))
		}
		if r.c.keyInSpans {
			span.SetAttributes(AttrKey.String(e.Key))
		}
		if e.Err != nil {
			recordError(span, e.Err, end)
		}
	}
	span.End(trace.WithTimestamp(end))
}

// bindingName is the name of the rule e's decision reports: for a policy,
// its binding rule (the rule that denied, or the one with the fewest
// remaining), which ratelimit puts in e.Rule; "" for a policy's error
// before any rule decided. A lone rule without a Name is "default".
func bindingName(e ratelimit.Event) string {
	if e.Rule.Name == "" && e.Policy == nil {
		return "default"
	}
	return e.Rule.Name
}
