package sluiceotel_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluiceotel "github.com/sluice-go/sluice/observe/otel"
)

// TestMetricsDocumented records every metric the package makes (a
// decision, a verification, a key created) and requires each, by name, in
// the package documentation and in the repository's docs/observability.md,
// so that a metric added is a metric documented.
func TestMetricsDocumented(t *testing.T) {
	ctx := context.Background()
	tel := newTelemetry(t)
	observeLimits, err := sluiceotel.RateLimitObserver(tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	observeKeys, err := sluiceotel.APIKeyObserver(tel.options()...)
	if err != nil {
		t.Fatal(err)
	}
	limiter, err := ratelimit.New(ratelimit.Memory(10), ratelimit.WithObserver(observeLimits))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := limiter.Consume(ctx, "k", ratelimit.Rule{Window: time.Minute, Max: 1}); err != nil {
		t.Fatal(err)
	}
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := apikey.New(db, apikey.WithObserver(observeKeys))
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Verify(ctx, plain); err != nil {
		t.Fatal(err)
	}
	got := tel.metrics(t)
	if len(got) < 8 {
		t.Fatalf("%d metrics recorded, want every kind (8)", len(got))
	}
	pkgDoc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	const page = "../../docs/observability.md"
	docs, err := os.ReadFile(page)
	if os.IsNotExist(err) {
		t.Skipf("%s: not in a clone of the repository", page)
	}
	if err != nil {
		t.Fatal(err)
	}
	for name := range got {
		if !strings.Contains(string(pkgDoc), "\t"+name+" ") {
			t.Errorf("metric %s is not in the package documentation (doc.go)", name)
		}
		if !strings.Contains(string(docs), "`"+name+"`") {
			t.Errorf("metric %s is not in %s", name, page)
		}
	}
}
