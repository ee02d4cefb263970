package sluiceotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	sluiceotel "github.com/sluice-go/sluice/observe/otel"
)

// tripCounter is core/memory that reports one round trip per call, as a
// SQL adapter reports one per statement.
type tripCounter struct {
	*memory.Memory
}

func (a tripCounter) Create(ctx context.Context, t *driver.Table, v []driver.Assignment) (driver.Record, error) {
	driver.AddRoundTrips(ctx, 1)
	return a.Memory.Create(ctx, t, v)
}

func (a tripCounter) FindOne(ctx context.Context, t *driver.Table, w []driver.Where) (driver.Record, error) {
	driver.AddRoundTrips(ctx, 1)
	return a.Memory.FindOne(ctx, t, w)
}

func (a tripCounter) FindMany(ctx context.Context, t *driver.Table, w []driver.Where, o driver.FindOptions) ([]driver.Record, error) {
	driver.AddRoundTrips(ctx, 1)
	return a.Memory.FindMany(ctx, t, w, o)
}

func (a tripCounter) Update(ctx context.Context, t *driver.Table, w []driver.Where, s []driver.Assignment) (driver.Record, error) {
	driver.AddRoundTrips(ctx, 1)
	return a.Memory.Update(ctx, t, w, s)
}

func (a tripCounter) UpdateMany(ctx context.Context, t *driver.Table, w []driver.Where, s []driver.Assignment) (int64, error) {
	driver.AddRoundTrips(ctx, 1)
	return a.Memory.UpdateMany(ctx, t, w, s)
}

func (a tripCounter) Delete(ctx context.Context, t *driver.Table, w []driver.Where) (bool, error) {
	driver.AddRoundTrips(ctx, 1)
	return a.Memory.Delete(ctx, t, w)
}

func (a tripCounter) DeleteMany(ctx context.Context, t *driver.Table, w []driver.Where) (int64, error) {
	driver.AddRoundTrips(ctx, 1)
	return a.Memory.DeleteMany(ctx, t, w)
}

func (a tripCounter) Count(ctx context.Context, t *driver.Table, w []driver.Where) (int64, error) {
	driver.AddRoundTrips(ctx, 1)
	return a.Memory.Count(ctx, t, w)
}

func (a tripCounter) IncrementOne(ctx context.Context, t *driver.Table, w []driver.Where, inc []driver.Delta, s []driver.Assignment) (driver.Record, error) {
	driver.AddRoundTrips(ctx, 1)
	return a.Memory.IncrementOne(ctx, t, w, inc, s)
}

func (a tripCounter) Transaction(context.Context, func(context.Context, driver.Adapter) error) error {
	return errors.New("tripCounter: no transactions")
}

// Verifications on an apikey manager over core/memory are counted by
// outcome (the denial's code) and storage, with their round trips, and
// under a span with WithSpans become spans carrying the key's id.
func TestAPIKeyObserver(t *testing.T) {
	tel := newTelemetry(t)
	observe, err := sluiceotel.APIKeyObserver(tel.options(sluiceotel.WithSpans())...)
	if err != nil {
		t.Fatal(err)
	}
	clock := newClock()
	mem := memory.New()
	db, err := core.New(tripCounter{mem})
	if err != nil {
		t.Fatal(err)
	}
	var (
		events []apikey.Event
		calls  []int64 // the adapter's calls during each verification
		before int64
	)
	keys, err := apikey.New(db, apikey.WithClock(clock.Now),
		apikey.WithObserver(func(ctx context.Context, e apikey.Event) {
			if e.Kind == apikey.Verified {
				events = append(events, e)
				calls = append(calls, mem.Calls()-before)
			}
			observe(ctx, e)
		}))
	if err != nil {
		t.Fatal(err)
	}
	plain, key, err := keys.Create(context.Background(), apikey.CreateParams{ReferenceID: "user-1",
		RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 1}})
	if err != nil {
		t.Fatal(err)
	}
	before = mem.Calls()
	ctx, parent := tel.tp.Tracer("test").Start(context.Background(), "request")
	var codes_ []apikey.Code
	for _, k := range []string{plain, plain, "sk_unknown"} {
		before = mem.Calls()
		r, err := keys.Verify(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		codes_ = append(codes_, r.Code)
	}
	before = mem.Calls()
	if _, err := keys.Verify(ctx, plain, apikey.Cost(-1)); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Cost(-1): %v, want ErrInvalid", err)
	}
	parent.End()
	if codes_[0] != "" || codes_[1] != apikey.CodeRateLimited || codes_[2] != apikey.CodeInvalid {
		t.Fatalf("codes %q", codes_)
	}

	st := attribute.String("sluice.storage", "database")
	valid := set(st, attribute.String("sluice.outcome", "valid"))
	limited := set(st, attribute.String("sluice.outcome", "RATE_LIMITED"))
	unknown := set(st, attribute.String("sluice.outcome", "INVALID_API_KEY"))
	failed := set(st, attribute.String("sluice.outcome", "error"), attribute.String("error.type", "invalid"))
	sets := []attribute.Set{valid, limited, unknown, failed}

	got := tel.metrics(t)
	if len(got) != 4 {
		t.Errorf("%d metrics, want 4", len(got))
	}
	metricdatatest.AssertEqual(t, counter("sluice.apikey.changes", "{key}", "API keys created, updated and deleted, by kind of change.",
		point(set(st, attribute.String("sluice.apikey.change", "created")), 1)),
		got["sluice.apikey.changes"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	metricdatatest.AssertEqual(t, counter("sluice.apikey.verifications", "{verification}", "API-key verifications, by outcome.",
		point(valid, 1), point(limited, 1), point(unknown, 1), point(failed, 1)),
		got["sluice.apikey.verifications"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	var tripPoints []metricdata.HistogramDataPoint[int64]
	var durPoints []metricdata.HistogramDataPoint[float64]
	for i, e := range events {
		tripPoints = append(tripPoints, histPoint(sets[i], roundTripBounds, e.RoundTrips))
		durPoints = append(durPoints, histPoint(sets[i], durationBounds, e.Latency.Seconds()))
	}
	metricdatatest.AssertEqual(t, histogram("sluice.apikey.verification.round_trips", "{round_trip}",
		"Statements or commands an API-key verification sent to its database and storage.", tripPoints...),
		got["sluice.apikey.verification.round_trips"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	metricdatatest.AssertEqual(t, histogram("sluice.apikey.verification.duration", "s",
		"How long an API-key verification took.", durPoints...),
		got["sluice.apikey.verification.duration"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	// The round trips are the adapter's calls, one each.
	for i, e := range events[:3] {
		if e.RoundTrips != calls[i] || e.RoundTrips == 0 {
			t.Errorf("verification %d: %d round trips, the adapter had %d calls", i, e.RoundTrips, calls[i])
		}
	}

	spans := tel.spans.Ended()
	if len(spans) != 5 {
		t.Fatalf("%d spans, want 4 verifications and their parent", len(spans))
	}
	for i, s := range spans[:4] {
		e := events[i]
		want := sets[i].ToSlice()
		want = append(want, attribute.Int64("sluice.round_trips", e.RoundTrips))
		switch i {
		case 0:
			want = append(want, attribute.Int64("sluice.apikey.id", key.ID))
		case 1:
			want = append(want, attribute.Int64("sluice.apikey.id", key.ID), attribute.Float64("sluice.apikey.try_again_in", 60))
		}
		gotSet, wantSet := set(s.Attributes()...), set(want...)
		if s.Name() != "sluice.apikey.verify" || !gotSet.Equals(&wantSet) {
			t.Errorf("span %d %q attributes:\n got %v\nwant %v", i, s.Name(), s.Attributes(), want)
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || !s.StartTime().Equal(e.Start) || !s.EndTime().Equal(e.Start.Add(e.Latency)) {
			t.Errorf("span %d: parent %v %v–%v; want %v %v–%v", i, s.Parent().SpanID(), s.StartTime(), s.EndTime(),
				parent.SpanContext().SpanID(), e.Start, e.Start.Add(e.Latency))
		}
		wantCode := codes.Unset
		if i == 3 {
			wantCode = codes.Error
		}
		if s.Status().Code != wantCode {
			t.Errorf("span %d status %v, want %v", i, s.Status(), wantCode)
		}
	}
}
