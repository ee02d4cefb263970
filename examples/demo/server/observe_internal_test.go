package server

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// TestErrorsLoggedAtError feeds the loggers a failed decision and a failed
// verification: both are logged at Error with the error, and the key only
// hashed.
func TestErrorsLoggedAtError(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	failure := errors.New("connection refused")
	rateLimitLogger(log, newKeyHasher())(context.Background(), ratelimit.Event{
		Key: "203.0.113.9|/hello", Rule: ratelimit.Rule{Max: 5, Window: 10 * time.Second}, Cost: 1, Storage: "database", Err: failure,
	})
	apiKeyLogger(log)(context.Background(), apikey.Event{Storage: "database", Err: failure})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{`level=ERROR msg="rate limit: decision failed" outcome=error`, `level=ERROR msg="API key: verification failed" outcome=error`} {
		if !strings.Contains(lines[i], want) || !strings.Contains(lines[i], `error="connection refused"`) {
			t.Errorf("line %d = %s, want %s and the error", i, lines[i], want)
		}
	}
	if strings.Contains(buf.String(), "203.0.113.9") {
		t.Errorf("the client address is in the log:\n%s", buf.String())
	}

	buf.Reset()
	quiet := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rateLimitLogger(quiet, newKeyHasher())(context.Background(), ratelimit.Event{Key: "k", Decision: ratelimit.Decision{Allowed: false}})
	if buf.Len() != 0 {
		t.Errorf("a denial logged at level warn: %s", buf.String())
	}
}

// TestPrometheusText writes a gauge, an up-down counter and a histogram
// with a label value that needs escaping.
func TestPrometheusText(t *testing.T) {
	attrs := attribute.NewSet(attribute.String("a.b", "x\"y\\z\nw"))
	rm := metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{
		{Name: "z.hist", Unit: "s", Description: "H", Data: metricdata.Histogram[float64]{DataPoints: []metricdata.HistogramDataPoint[float64]{
			{Attributes: attrs, Count: 3, Bounds: []float64{0.5, 1}, BucketCounts: []uint64{1, 1, 1}, Sum: 2.25},
		}}},
		{Name: "a.gauge", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Value: 7}}}},
		{Name: "b.updown", Data: metricdata.Sum[int64]{DataPoints: []metricdata.DataPoint[int64]{{Value: -2}}}},
	}}}}
	var b strings.Builder
	w := bufio.NewWriter(&b)
	writePrometheus(w, rm)
	w.Flush()
	const want = `# TYPE a_gauge gauge
a_gauge 7
# TYPE b_updown gauge
b_updown -2
# HELP z_hist_seconds H
# TYPE z_hist_seconds histogram
z_hist_seconds_bucket{a_b="x\"y\\z\nw",le="0.5"} 1
z_hist_seconds_bucket{a_b="x\"y\\z\nw",le="1"} 2
z_hist_seconds_bucket{a_b="x\"y\\z\nw",le="+Inf"} 3
z_hist_seconds_sum{a_b="x\"y\\z\nw"} 2.25
z_hist_seconds_count{a_b="x\"y\\z\nw"} 3
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
