package adaptertest_test

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// memoryHarness serves core's in-memory adapter, natively or through the
// transaction fallback. Its peers are further handles on the same store, as
// several servers would each have their own handle on one database.
type memoryHarness struct {
	m        *memory.Memory
	fallback bool
}

func (h *memoryHarness) adapter() driver.Adapter {
	if h.fallback {
		return h.m.WithoutIncrementOne()
	}
	return h.m
}

func (h *memoryHarness) MakeAdapter(context.Context, *core.Schema) (driver.Adapter, error) {
	return h.adapter(), nil
}

func (h *memoryHarness) MakePeer(context.Context, *core.Schema) (driver.Adapter, error) {
	return h.adapter(), nil
}

func (h *memoryHarness) Capabilities() adaptertest.Capabilities {
	return adaptertest.Capabilities{SeveralPools: true}
}

func (h *memoryHarness) Close() {}

func TestMemoryNative(t *testing.T) {
	adaptertest.Run(t, func(context.Context, *testing.T) (adaptertest.Harness, error) {
		return &memoryHarness{m: memory.New()}, nil
	})
}

func TestMemoryFallback(t *testing.T) {
	adaptertest.Run(t, func(context.Context, *testing.T) (adaptertest.Harness, error) {
		return &memoryHarness{m: memory.New(), fallback: true}, nil
	})
}

// TestCustomAdapterExample runs the suite on the example's harness, as a
// user's TestConformance would.
func TestCustomAdapterExample(t *testing.T) { adaptertest.Run(t, newHarness) }
