package sluiceotel_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluiceotel "github.com/sluice-go/sluice/observe/otel"
)

// newClock is the tests' settable clock (adaptertest.Clock): it moves only
// when a test advances it, so windows and refills are crossed without
// sleeping.
func newClock() *adaptertest.Clock {
	return adaptertest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

// telemetry is a meter provider with a manual reader and a tracer provider
// with a span recorder.
type telemetry struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	tel := &telemetry{
		reader: reader,
		mp:     sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		spans:  spans,
		tp:     sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
	}
	t.Cleanup(func() {
		_ = tel.mp.Shutdown(context.Background())
		_ = tel.tp.Shutdown(context.Background())
	})
	return tel
}

func (tel *telemetry) options(extra ...sluiceotel.Option) []sluiceotel.Option {
	return append([]sluiceotel.Option{sluiceotel.WithMeterProvider(tel.mp), sluiceotel.WithTracerProvider(tel.tp)}, extra...)
}

// metrics collects and returns the metrics by name.
func (tel *telemetry) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != sluiceotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, sluiceotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func set(kv ...attribute.KeyValue) attribute.Set { return attribute.NewSet(kv...) }

func counter(name, unit, desc string, points ...metricdata.DataPoint[int64]) metricdata.Metrics {
	return metricdata.Metrics{Name: name, Unit: unit, Description: desc,
		Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: points}}
}

func point(s attribute.Set, v int64) metricdata.DataPoint[int64] {
	return metricdata.DataPoint[int64]{Attributes: s, Value: v}
}

var (
	durationBounds  = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
	roundTripBounds = []float64{0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20}
)

// buckets returns the bucket counts of values under bounds.
func buckets[N int64 | float64](bounds []float64, values ...N) []uint64 {
	out := make([]uint64, len(bounds)+1)
	for _, v := range values {
		i := 0
		for i < len(bounds) && float64(v) > bounds[i] {
			i++
		}
		out[i]++
	}
	return out
}

func histPoint[N int64 | float64](s attribute.Set, bounds []float64, values ...N) metricdata.HistogramDataPoint[N] {
	p := metricdata.HistogramDataPoint[N]{Attributes: s, Count: uint64(len(values)), Bounds: bounds, BucketCounts: buckets(bounds, values...)}
	for i, v := range values {
		p.Sum += v
		if lo, _ := p.Min.Value(); i == 0 || v < lo {
			p.Min = metricdata.NewExtrema(v)
		}
		if hi, _ := p.Max.Value(); i == 0 || v > hi {
			p.Max = metricdata.NewExtrema(v)
		}
	}
	return p
}

func histogram[N int64 | float64](name, unit, desc string, points ...metricdata.HistogramDataPoint[N]) metricdata.Metrics {
	return metricdata.Metrics{Name: name, Unit: unit, Description: desc,
		Data: metricdata.Histogram[N]{Temporality: metricdata.CumulativeTemporality, DataPoints: points}}
}

// Decisions on a Memory limiter are counted by outcome, with the mode,
// rule and storage as attributes and never the key; their costs add up;
// each has a duration and zero round trips (Memory sends nothing).
func TestRateLimitMetrics(t *testing.T) {
	ctx := context.Background()
	tel := newTelemetry(t)
	observe, err := sluiceotel.RateLimitObserver(tel.options(sluiceotel.WithAttributes(attribute.String("limiter", "login")))...)
	if err != nil {
		t.Fatal(err)
	}
	clock := newClock()
	var events []ratelimit.Event
	l, err := ratelimit.New(ratelimit.Memory(100), ratelimit.WithClock(clock.Now),
		ratelimit.WithObserver(func(ctx context.Context, e ratelimit.Event) { events = append(events, e); observe(ctx, e) }))
	if err != nil {
		t.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 2}
	var outcomes []bool
	step := func(d ratelimit.Decision, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		outcomes = append(outcomes, d.Allowed)
	}
	step(l.Consume(ctx, "203.0.113.7", rule))     // allowed
	step(l.ConsumeN(ctx, "203.0.113.7", rule, 1)) // allowed
	step(l.Consume(ctx, "203.0.113.7", rule))     // denied
	step(l.ConsumeN(ctx, "203.0.113.8", rule, 3)) // denied: above Max
	clock.Advance(time.Minute)
	step(l.Consume(ctx, "203.0.113.7", rule)) // allowed: a new window
	if fmt.Sprint(outcomes) != "[true true false false true]" {
		t.Fatalf("decisions %v", outcomes)
	}
	if _, err := l.Consume(ctx, "", rule); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("empty key: %v, want ErrInvalid", err)
	}

	base := []attribute.KeyValue{attribute.String("limiter", "login"), attribute.String("sluice.ratelimit.mode", "FixedWindow"),
		attribute.String("sluice.ratelimit.rule", "2-M"), attribute.String("sluice.ratelimit.rule.name", "default"), attribute.Bool("sluice.ratelimit.shadow", false), attribute.String("sluice.storage", "memory")}
	allowed := set(append(base, attribute.String("sluice.outcome", "allowed"))...)
	denied := set(append(base, attribute.String("sluice.outcome", "denied"))...)
	failed := set(append(base, attribute.String("sluice.outcome", "error"), attribute.String("error.type", "invalid"))...)

	got := tel.metrics(t)
	if len(got) != 4 {
		t.Errorf("%d metrics, want 4: %v", len(got), got)
	}
	metricdatatest.AssertEqual(t, counter("sluice.ratelimit.decisions", "{decision}", "Rate-limit decisions, by outcome.",
		point(allowed, 3), point(denied, 2), point(failed, 1)), got["sluice.ratelimit.decisions"], metricdatatest.IgnoreTimestamp())
	metricdatatest.AssertEqual(t, counter("sluice.ratelimit.cost", "{unit}", "Units the decisions asked for (0 for a Check).",
		point(allowed, 3), point(denied, 4), point(failed, 1)), got["sluice.ratelimit.cost"], metricdatatest.IgnoreTimestamp())
	metricdatatest.AssertEqual(t, histogram("sluice.ratelimit.decision.round_trips", "{round_trip}",
		"Statements or commands a rate-limit decision sent to its storage.",
		histPoint[int64](allowed, roundTripBounds, 0, 0, 0), histPoint[int64](denied, roundTripBounds, 0, 0),
		histPoint[int64](failed, roundTripBounds, 0)), got["sluice.ratelimit.decision.round_trips"], metricdatatest.IgnoreTimestamp())

	// The durations are the events' own, measured on the wall clock.
	var lat = map[string][]float64{}
	for _, e := range events {
		lat[e.Outcome()] = append(lat[e.Outcome()], e.Latency.Seconds())
	}
	metricdatatest.AssertEqual(t, histogram("sluice.ratelimit.decision.duration", "s", "How long a rate-limit decision took.",
		histPoint(allowed, durationBounds, lat["allowed"]...), histPoint(denied, durationBounds, lat["denied"]...),
		histPoint(failed, durationBounds, lat["error"]...)), got["sluice.ratelimit.decision.duration"], metricdatatest.IgnoreTimestamp())

	if n := len(tel.spans.Ended()); n != 0 {
		t.Errorf("%d spans without WithSpans, want 0", n)
	}
}

// Synthetic events pin the histograms down exactly: durations in seconds,
// round trips in their buckets, and the error types.
func TestRateLimitHistogramsExact(t *testing.T) {
	tel := newTelemetry(t)
	observe, err := sluiceotel.RateLimitObserver(tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rule := ratelimit.Rule{Window: 30 * time.Second, Max: 5}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ev := func(latency time.Duration, trips int64, allowed bool, err error) ratelimit.Event {
		return ratelimit.Event{Key: "k", Rule: rule, Cost: 1, Mode: ratelimit.GCRA, Storage: "database",
			Decision: ratelimit.Decision{Allowed: allowed}, Err: err, Start: start, Latency: latency, RoundTrips: trips}
	}
	observe(ctx, ev(750*time.Microsecond, 1, true, nil))
	observe(ctx, ev(3*time.Millisecond, 2, true, nil))
	observe(ctx, ev(2*time.Second, 7, true, nil))
	observe(ctx, ev(40*time.Millisecond, 30, false, fmt.Errorf("boom: %w", core.ErrContention)))
	observe(ctx, ev(time.Millisecond, 1, false, context.DeadlineExceeded))
	observe(ctx, ev(time.Millisecond, 1, false, errors.New("connection refused")))

	base := []attribute.KeyValue{attribute.String("sluice.ratelimit.mode", "GCRA"),
		attribute.String("sluice.ratelimit.rule", "5/30s"), attribute.String("sluice.ratelimit.rule.name", "default"), attribute.Bool("sluice.ratelimit.shadow", false), attribute.String("sluice.storage", "database")}
	allowed := set(append(base, attribute.String("sluice.outcome", "allowed"))...)
	errSet := func(typ string) attribute.Set {
		return set(append(base, attribute.String("sluice.outcome", "error"), attribute.String("error.type", typ))...)
	}
	got := tel.metrics(t)
	metricdatatest.AssertEqual(t, histogram("sluice.ratelimit.decision.duration", "s", "How long a rate-limit decision took.",
		histPoint(allowed, durationBounds, 0.00075, 0.003, 2),
		histPoint(errSet("contention"), durationBounds, 0.04),
		histPoint(errSet("deadline_exceeded"), durationBounds, 0.001),
		histPoint(errSet("_OTHER"), durationBounds, 0.001)),
		got["sluice.ratelimit.decision.duration"], metricdatatest.IgnoreTimestamp())
	metricdatatest.AssertEqual(t, histogram("sluice.ratelimit.decision.round_trips", "{round_trip}",
		"Statements or commands a rate-limit decision sent to its storage.",
		histPoint[int64](allowed, roundTripBounds, 1, 2, 7),
		histPoint[int64](errSet("contention"), roundTripBounds, 30),
		histPoint[int64](errSet("deadline_exceeded"), roundTripBounds, 1),
		histPoint[int64](errSet("_OTHER"), roundTripBounds, 1)),
		got["sluice.ratelimit.decision.round_trips"], metricdatatest.IgnoreTimestamp())
	// The expected buckets are computed by the test's own helper; pin a
	// few by hand so that the helper cannot agree with a wrong histogram.
	h := got["sluice.ratelimit.decision.round_trips"].Data.(metricdata.Histogram[int64])
	for _, p := range h.DataPoints {
		if p.Attributes.Equals(&allowed) && fmt.Sprint(p.BucketCounts) != "[0 1 1 0 0 0 0 1 0 0 0 0]" {
			t.Errorf("round-trip buckets %v", p.BucketCounts)
		}
	}
	d := got["sluice.ratelimit.decision.duration"].Data.(metricdata.Histogram[float64])
	for _, p := range d.DataPoints {
		if p.Attributes.Equals(&allowed) && (fmt.Sprint(p.BucketCounts) != "[0 0 0 0 1 0 1 0 0 0 0 0 0 0 1 0 0]" || p.Sum != 2.00375) {
			t.Errorf("duration buckets %v sum %v", p.BucketCounts, p.Sum)
		}
	}
}

// With WithSpans, a decision under a span becomes its child, with the
// event's own start and end and its attributes; an error sets the status
// and records an exception; a decision without a span makes none.
func TestRateLimitSpans(t *testing.T) {
	tel := newTelemetry(t)
	observe, err := sluiceotel.RateLimitObserver(tel.options(sluiceotel.WithSpans())...)
	if err != nil {
		t.Fatal(err)
	}
	clock := newClock()
	var events []ratelimit.Event
	l, err := ratelimit.New(ratelimit.Memory(100), ratelimit.WithClock(clock.Now), ratelimit.WithMode(ratelimit.SlidingWindow),
		ratelimit.WithObserver(func(ctx context.Context, e ratelimit.Event) { events = append(events, e); observe(ctx, e) }))
	if err != nil {
		t.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Second, Max: 1}
	if _, err := l.Consume(context.Background(), "no-parent", rule); err != nil {
		t.Fatal(err)
	}
	if n := len(tel.spans.Ended()); n != 0 {
		t.Fatalf("%d spans for a decision without a parent, want 0", n)
	}
	ctx, parent := tel.tp.Tracer("test").Start(context.Background(), "request")
	for range 2 {
		if _, err := l.Consume(ctx, "user-1", rule); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Consume(ctx, "user-1", ratelimit.Rule{Window: time.Second, Max: -3}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("bad rule: %v", err)
	}
	parent.End()

	spans := tel.spans.Ended()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 3 decisions and their parent", len(spans))
	}
	base := []attribute.KeyValue{attribute.String("sluice.ratelimit.mode", "SlidingWindow"), attribute.String("sluice.storage", "memory")}
	want := [][]attribute.KeyValue{
		append(base, attribute.String("sluice.outcome", "allowed"), attribute.String("sluice.ratelimit.rule", "1-S"), attribute.String("sluice.ratelimit.rule.name", "default"), attribute.Bool("sluice.ratelimit.shadow", false),
			attribute.Int64("sluice.ratelimit.cost", 1), attribute.Int64("sluice.round_trips", 0),
			attribute.Int64("sluice.ratelimit.limit", 1), attribute.Int64("sluice.ratelimit.remaining", 0),
			attribute.Float64("sluice.ratelimit.retry_after", 0)),
		append(base, attribute.String("sluice.outcome", "denied"), attribute.String("sluice.ratelimit.rule", "1-S"), attribute.String("sluice.ratelimit.rule.name", "default"), attribute.Bool("sluice.ratelimit.shadow", false),
			attribute.Int64("sluice.ratelimit.cost", 1), attribute.Int64("sluice.round_trips", 0),
			attribute.Int64("sluice.ratelimit.limit", 1), attribute.Int64("sluice.ratelimit.remaining", 0),
			attribute.Float64("sluice.ratelimit.retry_after", events[2].Decision.RetryAfter.Seconds())),
		append(base, attribute.String("sluice.outcome", "error"), attribute.String("sluice.ratelimit.rule", "-3-S"), attribute.String("sluice.ratelimit.rule.name", "default"), attribute.Bool("sluice.ratelimit.shadow", false),
			attribute.String("error.type", "invalid"),
			attribute.Int64("sluice.ratelimit.cost", 1), attribute.Int64("sluice.round_trips", 0)),
	}
	if events[2].Decision.RetryAfter <= 0 {
		t.Errorf("the denial's RetryAfter %v, want positive", events[2].Decision.RetryAfter)
	}
	for i, s := range spans[:3] {
		e := events[i+1]
		if s.Name() != "sluice.ratelimit.decision" || s.SpanKind() != trace.SpanKindInternal {
			t.Errorf("span %d: %q kind %v", i, s.Name(), s.SpanKind())
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("span %d: parent %v, want %v", i, s.Parent().SpanID(), parent.SpanContext().SpanID())
		}
		if !s.StartTime().Equal(e.Start) || !s.EndTime().Equal(e.Start.Add(e.Latency)) {
			t.Errorf("span %d: %v–%v, want %v–%v", i, s.StartTime(), s.EndTime(), e.Start, e.Start.Add(e.Latency))
		}
		gotSet, wantSet := set(s.Attributes()...), set(want[i]...)
		if !gotSet.Equals(&wantSet) {
			t.Errorf("span %d attributes:\n got %v\nwant %v", i, s.Attributes(), want[i])
		}
		if i < 2 && (s.Status().Code != codes.Unset || len(s.Events()) != 0) {
			t.Errorf("span %d: status %v, events %v; a denial is not an error", i, s.Status(), s.Events())
		}
	}
	s := spans[2]
	if want := "invalid: key " + driver.RedactKey("user-1"); s.Status().Code != codes.Error || s.Status().Description != want {
		t.Errorf("error span status %+v, want Error %q: the class and the key redacted", s.Status(), want)
	}
	if evs := s.Events(); len(evs) != 1 || evs[0].Name != "exception" || !evs[0].Time.Equal(s.EndTime()) {
		t.Errorf("error span events %+v, want one exception at its end", evs)
	}
	if spans[3].Name() != "request" {
		t.Errorf("last span %q, want the parent", spans[3].Name())
	}
}

// The key goes into spans only when asked, and never into metrics.
func TestKeyInSpans(t *testing.T) {
	tel := newTelemetry(t)
	observe, err := sluiceotel.RateLimitObserver(tel.options(sluiceotel.WithSpans(), sluiceotel.WithKeyInSpans())...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tel.tp.Tracer("test").Start(context.Background(), "request")
	observe(ctx, ratelimit.Event{Key: "203.0.113.7", Rule: ratelimit.Rule{Window: time.Minute, Max: 1}, Storage: "memory",
		Decision: ratelimit.Decision{Allowed: true}, Start: time.Unix(100, 0), Latency: time.Millisecond})
	parent.End()
	s := tel.spans.Ended()[0]
	attrs := set(s.Attributes()...)
	if v, ok := attrs.Value("sluice.ratelimit.key"); !ok || v.AsString() != "203.0.113.7" {
		t.Errorf("span key %v %v, want 203.0.113.7", v, ok)
	}
	for name, m := range tel.metrics(t) {
		if fmt.Sprint(m.Data) == "" || containsKey(m.Data) {
			t.Errorf("metric %s carries the key: %+v", name, m.Data)
		}
	}
}

func containsKey(d metricdata.Aggregation) bool {
	var sets []attribute.Set
	switch d := d.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	default:
		return true
	}
	for _, s := range sets {
		for _, kv := range s.ToSlice() {
			if kv.Key == "sluice.ratelimit.key" || kv.Value.Emit() == "203.0.113.7" {
				return true
			}
		}
	}
	return len(sets) == 0
}

func TestOptionsRefused(t *testing.T) {
	for name, opts := range map[string][]sluiceotel.Option{
		"nil option":        {nil},
		"invalid attribute": {sluiceotel.WithAttributes(attribute.KeyValue{})},
	} {
		if _, err := sluiceotel.RateLimitObserver(opts...); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("RateLimitObserver(%s) = %v, want ErrInvalid", name, err)
		}
		if _, err := sluiceotel.APIKeyObserver(opts...); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("APIKeyObserver(%s) = %v, want ErrInvalid", name, err)
		}
	}
}
