package server

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// newMetrics returns a meter provider whose measurements a ManualReader
// collects on each scrape. The demo writes the Prometheus text format
// itself rather than link the Prometheus exporter and client_golang,
// which would add several packages (protobuf among them) to its build.
func newMetrics() (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), reader
}

// metricsHandler answers GET /metrics with what reader collects, in the
// Prometheus text exposition format (version 0.0.4): counters, gauges and
// histograms; the name gets the unit's suffix (_seconds) and counters
// _total, as the OpenTelemetry Prometheus exporter names them.
func metricsHandler(reader *sdkmetric.ManualReader) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(r.Context(), &rm); err != nil {
			http.Error(w, "collecting metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriter(w)
		writePrometheus(bw, rm)
		_ = bw.Flush()
	}
}

func writePrometheus(w *bufio.Writer, rm metricdata.ResourceMetrics) {
	var ms []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		ms = append(ms, sm.Metrics...)
	}
	slices.SortFunc(ms, func(a, b metricdata.Metrics) int { return cmp.Compare(a.Name, b.Name) })
	for _, m := range ms {
		name := promName(m.Name)
		switch m.Unit {
		case "s":
			name += "_seconds"
		case "By":
			name += "_bytes"
		}
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			writeSum(w, name, m.Description, d)
		case metricdata.Sum[float64]:
			writeSum(w, name, m.Description, d)
		case metricdata.Gauge[int64]:
			writePoints(w, name, m.Description, "gauge", d.DataPoints)
		case metricdata.Gauge[float64]:
			writePoints(w, name, m.Description, "gauge", d.DataPoints)
		case metricdata.Histogram[int64]:
			writeHistogram(w, name, m.Description, d.DataPoints)
		case metricdata.Histogram[float64]:
			writeHistogram(w, name, m.Description, d.DataPoints)
		}
		// Exponential histograms and summaries: the demo makes none.
	}
}

func writeSum[N int64 | float64](w *bufio.Writer, name, help string, d metricdata.Sum[N]) {
	if d.IsMonotonic {
		writePoints(w, name+"_total", help, "counter", d.DataPoints)
	} else {
		writePoints(w, name, help, "gauge", d.DataPoints)
	}
}

func writeHeader(w *bufio.Writer, name, help, typ string) {
	if help != "" {
		fmt.Fprintf(w, "# HELP %s %s\n", name, escapeHelp(help))
	}
	fmt.Fprintf(w, "# TYPE %s %s\n", name, typ)
}

func writePoints[N int64 | float64](w *bufio.Writer, name, help, typ string, points []metricdata.DataPoint[N]) {
	writeHeader(w, name, help, typ)
	points = slices.Clone(points)
	slices.SortFunc(points, func(a, b metricdata.DataPoint[N]) int {
		return cmp.Compare(labels(a.Attributes, "", ""), labels(b.Attributes, "", ""))
	})
	for _, p := range points {
		fmt.Fprintf(w, "%s%s %s\n", name, labels(p.Attributes, "", ""), formatFloat(float64(p.Value)))
	}
}

func writeHistogram[N int64 | float64](w *bufio.Writer, name, help string, points []metricdata.HistogramDataPoint[N]) {
	writeHeader(w, name, help, "histogram")
	points = slices.Clone(points)
	slices.SortFunc(points, func(a, b metricdata.HistogramDataPoint[N]) int {
		return cmp.Compare(labels(a.Attributes, "", ""), labels(b.Attributes, "", ""))
	})
	for _, p := range points {
		var cumulative uint64
		for i, bound := range p.Bounds {
			cumulative += p.BucketCounts[i]
			fmt.Fprintf(w, "%s_bucket%s %d\n", name, labels(p.Attributes, "le", formatFloat(bound)), cumulative)
		}
		fmt.Fprintf(w, "%s_bucket%s %d\n", name, labels(p.Attributes, "le", "+Inf"), p.Count)
		fmt.Fprintf(w, "%s_sum%s %s\n", name, labels(p.Attributes, "", ""), formatFloat(float64(p.Sum)))
		fmt.Fprintf(w, "%s_count%s %d\n", name, labels(p.Attributes, "", ""), p.Count)
	}
}

// labels formats attrs, and the label extra=value when extra is not
// empty, as {a="x",b="y"}; "" when there are none.
func labels(attrs attribute.Set, extra, value string) string {
	if attrs.Len() == 0 && extra == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	iter := attrs.Iter()
	for iter.Next() {
		kv := iter.Attribute()
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(promName(string(kv.Key)))
		b.WriteString(`="`)
		b.WriteString(escapeLabel(kv.Value.Emit()))
		b.WriteByte('"')
	}
	if extra != "" {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(extra + `="` + escapeLabel(value) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

// promName replaces the characters a Prometheus name may not hold (the
// dots of OpenTelemetry's names) with underscores.
func promName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == ':' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
