package adaptertest

import (
	"sync/atomic"
	"time"
)

// Clock is a settable clock for tests: time moves only when the test moves
// it, so a test that depends on time passing says how much instead of
// sleeping. Its method value c.Now is the func() time.Time that sluice's
// WithClock options take. The suite's cases run on it, and so may your own
// tests. It is safe for concurrent use: race tests read it from many
// goroutines while one goroutine moves it. Its zero value reads the Unix
// epoch.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the clock's reading in UTC.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set moves the clock to t, forwards or backwards.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Advance moves the clock by d; a negative d moves it back.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
