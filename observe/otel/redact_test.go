package sluiceotel_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluiceotel "github.com/sluice-go/sluice/observe/otel"
)

const secretKey = "sk_live_SECRETpart0123456789abcdefghij"

// echoStorage fails every call with a message that echoes its key, as a
// driver's message may.
type echoStorage struct{ *memory.Storage }

func (echoStorage) IncrementBounded(_ context.Context, k string, _, _ int64, _ time.Duration) (driver.Counter, bool, error) {
	return driver.Counter{}, false, fmt.Errorf("store down: increment %q", k)
}
func (echoStorage) Get(_ context.Context, k string) (string, bool, error) {
	return "", false, fmt.Errorf("store down: get %s", k)
}
func (echoStorage) AdvanceTAT(_ context.Context, k string, _, _, _ int64) (int64, bool, error) {
	return 0, false, errors.New("store down: advance " + k)
}

// TestSpansAndLogsNeverHoldTheKey: with the key a secret (an x-api-key
// header, say) and no WithKeyInSpans, a failing storage (whose message
// echoes the key) and bad input put the key in no span attribute, status
// or event, and an observer logging the event's error with slog writes it
// in no line.
func TestSpansAndLogsNeverHoldTheKey(t *testing.T) {
	tel := newTelemetry(t)
	observe, err := sluiceotel.RateLimitObserver(tel.options(sluiceotel.WithSpans())...)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, parent := tel.tp.Tracer("test").Start(context.Background(), "request")
	rule := ratelimit.Rule{Window: time.Minute, Max: 5}
	failures := 0
	for _, mode := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.SlidingWindow, ratelimit.GCRA} {
		l, err := ratelimit.New(ratelimit.Secondary(echoStorage{memory.NewStorage()}), ratelimit.WithMode(mode),
			ratelimit.WithObserver(func(ctx context.Context, e ratelimit.Event) {
				observe(ctx, e)
				log.ErrorContext(ctx, "decision", "outcome", e.Outcome(), "err", e.Err)
			}))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []func() error{
			func() error { _, err := l.Consume(ctx, secretKey, rule); return err },
			func() error { _, err := l.Check(ctx, secretKey, rule); return err },
			func() error { _, err := l.ConsumeN(ctx, secretKey, rule, -1); return err },
			func() error { _, err := l.Consume(ctx, secretKey+"\x00", rule); return err },
			func() error { _, err := l.Consume(ctx, secretKey, ratelimit.Rule{Max: 1}); return err },
		} {
			if err := f(); err == nil {
				t.Fatalf("%v: no error", mode)
			}
			failures++
		}
	}
	parent.End()
	spans := tel.spans.Ended()
	if len(spans) != failures+1 {
		t.Fatalf("%d spans, want %d failures and their parent", len(spans), failures)
	}
	for _, s := range spans {
		var text strings.Builder
		fmt.Fprint(&text, s.Attributes(), s.Status())
		for _, e := range s.Events() {
			fmt.Fprint(&text, e.Name, e.Attributes)
		}
		if strings.Contains(text.String(), "SECRETpart") {
			t.Errorf("span %q holds the key: %s", s.Name(), text.String())
		}
	}
	if n := strings.Count(logs.String(), "\n"); n != failures || strings.Contains(logs.String(), "SECRETpart") {
		t.Errorf("%d log lines for %d failures, the key in them: %v\n%s", n, failures, strings.Contains(logs.String(), "SECRETpart"), logs.String())
	}
}
