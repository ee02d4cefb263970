package sluiceotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-go/sluice/core/apikey"
)

// APIKeyObserver returns an observer for apikey.WithObserver that records
// each verification: the metrics sluice.apikey.verifications,
// sluice.apikey.verification.duration and
// sluice.apikey.verification.round_trips, and with [WithSpans] a span; and
// each change to the stored keys (created, updated, deleted) in
// sluice.apikey.changes.
// See the package documentation for their units and attributes. Its error
// is an invalid option (wrapping core.ErrInvalid) or the meter's refusal
// of an instrument. [WithKeyInSpans] does not apply: the plaintext key is
// never recorded, and spans always carry the key's numeric id.
func APIKeyObserver(opts ...Option) (func(context.Context, apikey.Event), error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	meter := c.mp.Meter(ScopeName)
	r := &apiKeyRecorder{c: c, tracer: c.tp.Tracer(ScopeName)}
	if r.verifications, err = meter.Int64Counter("sluice.apikey.verifications",
		metric.WithUnit("{verification}"), metric.WithDescription("API-key verifications, by outcome.")); err != nil {
		return nil, err
	}
	if r.duration, err = meter.Float64Histogram("sluice.apikey.verification.duration",
		metric.WithUnit("s"), metric.WithDescription("How long an API-key verification took."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if r.roundTrips, err = meter.Int64Histogram("sluice.apikey.verification.round_trips",
		metric.WithUnit("{round_trip}"), metric.WithDescription("Statements or commands an API-key verification sent to its database and storage."),
		metric.WithExplicitBucketBoundaries(roundTripBuckets...)); err != nil {
		return nil, err
	}
	if r.changes, err = meter.Int64Counter("sluice.apikey.changes",
		metric.WithUnit("{key}"), metric.WithDescription("API keys created, updated and deleted, by kind of change.")); err != nil {
		return nil, err
	}
	return r.observe, nil
}

type apiKeyRecorder struct {
	c             *config
	tracer        trace.Tracer
	verifications metric.Int64Counter
	changes       metric.Int64Counter
	duration      metric.Float64Histogram
	roundTrips    metric.Int64Histogram
	sets          attrCache[apiKeyLabels]
}

// apiKeyLabels are a verification's metric attributes.
type apiKeyLabels struct{ outcome, storage, errType string }

func (r *apiKeyRecorder) observe(ctx context.Context, e apikey.Event) {
	if e.Kind != apikey.Verified {
		r.changed(ctx, e)
		return
	}
	l := apiKeyLabels{outcome: e.Outcome(), storage: e.Storage}
	if e.Err != nil {
		l.errType = errorType(e.Err)
	}
	a := r.sets.get(l, func() []attribute.KeyValue {
		kv := append(make([]attribute.KeyValue, 0, len(r.c.attrs)+3), r.c.attrs...)
		kv = append(kv, AttrOutcome.String(l.outcome), AttrStorage.String(l.storage))
		if l.errType != "" {
			kv = append(kv, AttrErrorType.String(l.errType))
		}
		return kv
	})
	r.verifications.Add(ctx, 1, a.opt)
	r.duration.Record(ctx, e.Latency.Seconds(), a.opt)
	r.roundTrips.Record(ctx, e.RoundTrips, a.opt)

	if !r.c.spans || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	_, span := r.tracer.Start(ctx, "sluice.apikey.verify",
		trace.WithTimestamp(e.Start), trace.WithSpanKind(trace.SpanKindInternal))
	end := e.Start.Add(e.Latency)
	if span.IsRecording() {
		span.SetAttributes(a.set.ToSlice()...)
		span.SetAttributes(AttrRoundTrips.Int64(e.RoundTrips))
		if e.KeyID != 0 {
			span.SetAttributes(AttrKeyID.Int64(e.KeyID))
		}
		if e.Result.TryAgainIn > 0 {
			span.SetAttributes(AttrTryAgainIn.Float64(e.Result.TryAgainIn.Seconds()))
		}
		if e.Err != nil {
			recordError(span, e.Err, end)
		}
	}
	span.End(trace.WithTimestamp(end))
}

// changed counts a change to the stored keys: one per key, so that a
// DeleteExpired of n keys adds n.
func (r *apiKeyRecorder) changed(ctx context.Context, e apikey.Event) {
	l := apiKeyLabels{outcome: e.Kind.String(), storage: e.Storage}
	a := r.sets.get(l, func() []attribute.KeyValue {
		kv := append(make([]attribute.KeyValue, 0, len(r.c.attrs)+2), r.c.attrs...)
		return append(kv, AttrChange.String(l.outcome), AttrStorage.String(l.storage))
	})
	n := int64(1)
	if e.Kind == apikey.ExpiredDeleted {
		n = e.Count
	}
	r.changes.Add(ctx, n, a.opt)
}
