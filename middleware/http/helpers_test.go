package sluicehttp_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// t0 is the tests' start instant.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clock is a clock moved by hand, shared by a limiter or a manager and
// its test.
type clock struct{ ms atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ms.Store(t0.UnixMilli())
	return c
}

func (c *clock) Now() time.Time          { return time.UnixMilli(c.ms.Load()).UTC() }
func (c *clock) Set(d time.Duration)     { c.ms.Store(t0.Add(d).UnixMilli()) }
func (c *clock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

var rule3 = ratelimit.Rule{Window: 10 * time.Second, Max: 3}

func newLimiter(t *testing.T, s ratelimit.Storage, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(s, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

var errBroken = errors.New("database down")

// broken is an adapter whose every increment fails.
type broken struct{ *memory.Memory }

func (broken) IncrementOne(context.Context, *driver.Table, []driver.Where, []driver.Delta, []driver.Assignment) (driver.Record, error) {
	return nil, errBroken
}
