// Package testclock is the one settable clock core's tests share, so that
// no test file writes its own. Time moves only when a test moves it: a
// test that depends on time passing says how much, instead of sleeping.
//
// It is internal to the core module; tests outside core use
// adaptertest.Clock, which has the same methods.
package testclock

import (
	"sync/atomic"
	"testing"
	"time"
)

// Clock is a clock the test sets and advances. Its zero value reads the
// Unix epoch. It is safe for concurrent use: race tests read it from many
// goroutines while one goroutine moves it.
type Clock struct{ ns atomic.Int64 }

// New returns a clock reading t.
func New(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the clock's reading in UTC. Its method value (c.Now) is the
// func() time.Time that the WithClock options take.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set moves the clock to t, forwards or backwards.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Advance moves the clock by d; a negative d moves it back.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Zone loads the time zone name for a test, which it skips where the
// system has no time zone data for it.
func Zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no time zone data for %s: %v", name, err)
	}
	return loc
}
