package sluiceotel_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/sluice/core/ratelimit"
	sluiceotel "github.com/sluice-go/sluice/observe/otel"
)

func Example() {
	ctx := context.Background()
	// In a program: the global providers, set up by the OpenTelemetry SDK
	// and its exporters. Here a manual reader, to print what was recorded.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	observe, err := sluiceotel.RateLimitObserver(sluiceotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	limiter, err := ratelimit.New(ratelimit.Memory(10_000), ratelimit.WithObserver(observe))
	if err != nil {
		panic(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 2}
	for range 3 {
		if _, err := limiter.Consume(ctx, "203.0.113.7", rule); err != nil {
			panic(err)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "sluice.ratelimit.decisions" {
			continue
		}
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			outcome, _ := p.Attributes.Value("sluice.outcome")
			rule, _ := p.Attributes.Value("sluice.ratelimit.rule")
			fmt.Printf("%s %s: %d\n", outcome.AsString(), rule.AsString(), p.Value)
		}
	}
	// Unordered output:
	// allowed 2-M: 2
	// denied 2-M: 1
}
