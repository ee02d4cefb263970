package sluiceotel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// ScopeName is the instrumentation scope of the meters and tracers this
// package creates.
const ScopeName = "github.com/sluice-go/sluice/observe/otel"

// Attribute keys.
const (
	AttrOutcome    = attribute.Key("sluice.outcome")
	AttrStorage    = attribute.Key("sluice.storage")
	AttrMode       = attribute.Key("sluice.ratelimit.mode")
	AttrRule       = attribute.Key("sluice.ratelimit.rule")
	AttrRuleName   = attribute.Key("sluice.ratelimit.rule.name") // the binding rule's Name ("default" for a lone unnamed rule)
	AttrShadow     = attribute.Key("sluice.ratelimit.shadow")    // bool: a shadow rule would have denied (Decision.WouldDeny)
	AttrErrorType  = attribute.Key("error.type")
	AttrRoundTrips = attribute.Key("sluice.round_trips")
	AttrCost       = attribute.Key("sluice.ratelimit.cost")
	AttrLimit      = attribute.Key("sluice.ratelimit.limit")
	AttrRemaining  = attribute.Key("sluice.ratelimit.remaining")
	AttrRetryAfter = attribute.Key("sluice.ratelimit.retry_after") // seconds
	AttrKey        = attribute.Key("sluice.ratelimit.key")         // spans only, with WithKeyInSpans
	AttrKeyID      = attribute.Key("sluice.apikey.id")             // spans only
	AttrChange     = attribute.Key("sluice.apikey.change")         // "created", "updated", "deleted", "expired_deleted"
	AttrTryAgainIn = attribute.Key("sluice.apikey.try_again_in")   // seconds
)

// durationBuckets are the duration histograms' bucket boundaries, in
// seconds: from 50µs (an in-memory decision) to 5s.
var durationBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// roundTripBuckets are the round-trip histograms' bucket boundaries; the
// first bucket counts the events that sent nothing to a server.
var roundTripBuckets = []float64{0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20}

// Option configures an observer.
type Option func(*config)

type config struct {
	mp         metric.MeterProvider
	tp         trace.TracerProvider
	spans      bool
	keyInSpans bool
	attrs      []attribute.KeyValue
}

// WithMeterProvider records metrics with mp instead of the global meter
// provider.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithTracerProvider makes spans with tp instead of the global tracer
// provider. Spans are made only with [WithSpans].
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithSpans makes a child span of each event whose context carries a span;
// see "Spans" in the package documentation.
func WithSpans() Option { return func(c *config) { c.spans = true } }

// WithKeyInSpans adds the rate-limit key to spans as sluice.ratelimit.key.
// Keys are chosen by clients and are often personal data (IP addresses,
// user ids): they never go into metrics.
func WithKeyInSpans() Option { return func(c *config) { c.keyInSpans = true } }

// WithAttributes adds constant attributes to every measurement and span,
// such as attribute.String("limiter", "login") to tell several limiters
// apart. Keep their values few.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return func(c *config) { c.attrs = append(c.attrs, attrs...) }
}

func newConfig(opts []Option) (*config, error) {
	c := &config{}
	for _, o := range opts {
		if o == nil {
			return nil, invalidf("nil Option")
		}
		o(c)
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	for _, a := range c.attrs {
		if !a.Valid() {
			return nil, invalidf(fmt.Sprintf("attribute %q is not valid", a.Key))
		}
	}
	return c, nil
}

func invalidf(msg string) error { return fmt.Errorf("sluiceotel: %w: %s", core.ErrInvalid, msg) }

// errorType classifies err for the error.type attribute, in a few values.
// recordError records err on span as its status and an exception event:
// the error's class and, for an error about a key, the key redacted
// (driver.KeyError), never the error's text, which may hold what a caller
// or a driver put there (a key taken from a header, a value echoed back).
func recordError(span trace.Span, err error, at time.Time) {
	class := errorType(err)
	desc := class
	var ke *driver.KeyError
	if errors.As(err, &ke) {
		desc += ": key " + ke.Key
	}
	span.AddEvent("exception", trace.WithTimestamp(at), trace.WithAttributes(
		attribute.String("exception.type", class), attribute.String("exception.message", desc)))
	span.SetStatus(codes.Error, desc)
}

func errorType(err error) string {
	switch {
	case errors.Is(err, core.ErrInvalid):
		return "invalid"
	case errors.Is(err, core.ErrSchema):
		return "schema"
	case errors.Is(err, core.ErrContention):
		return "contention"
	case errors.Is(err, core.ErrUnsupported):
		return "unsupported"
	case errors.Is(err, core.ErrNotFound):
		return "not_found"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return "_OTHER"
}

// maxCachedSets bounds attrCache: past it, attribute sets are built per
// event rather than remembered.
const maxCachedSets = 1024

// attrCache remembers the attribute set of each combination of labels, so
// that a measurement does not sort and allocate its attributes each time.
type attrCache[K comparable] struct {
	m sync.Map // K → *attrEntry
	n atomic.Int64
}

type attrEntry struct {
	set attribute.Set
	opt metric.MeasurementOption
}

func (c *attrCache[K]) get(k K, build func() []attribute.KeyValue) *attrEntry {
	if v, ok := c.m.Load(k); ok {
		return v.(*attrEntry)
	}
	set := attribute.NewSet(build()...)
	e := &attrEntry{set: set, opt: metric.WithAttributeSet(set)}
	if c.n.Load() < maxCachedSets {
		if v, loaded := c.m.LoadOrStore(k, e); loaded {
			return v.(*attrEntry)
		}
		c.n.Add(1)
	}
	return e
}
