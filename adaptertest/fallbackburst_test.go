package adaptertest

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// alwaysLosing is an in-memory adapter without a native IncrementOne whose
// guarded writes never match: every fallback attempt loses its race, as
// under a burst that never drains.
type alwaysLosing struct{ *memory.Memory }

func (a alwaysLosing) UpdateMany(context.Context, *driver.Table, []driver.Where, []driver.Assignment) (int64, error) {
	return 0, nil
}

func (a alwaysLosing) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return a.Memory.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error { return fn(ctx, a) })
}

// The burst scenario fails when the fallback gives up: here every call
// ends with ErrContention once its retry budget is spent.
func TestFallbackBurstCatchesGivingUp(t *testing.T) {
	if testing.Short() {
		t.Skip("spends the fallback's whole retry budget (about 3 s)")
	}
	m := memory.New()
	a := alwaysLosing{m}
	s := core.MustSchema(core.Naming{}, CounterModel())
	db, err := core.New(a, core.WithSchema(s), core.WithFallback())
	if err != nil {
		t.Fatal(err)
	}
	f := &Fixture{Ctx: t.Context(), Schema: s, Adapter: a, DB: db}
	err = fallbackBurst(t.Context(), f)
	if err == nil || !strings.Contains(err.Error(), "ErrContention") {
		t.Fatalf("fallbackBurst on an adapter that always loses: %v, want a failure naming ErrContention", err)
	}
}
