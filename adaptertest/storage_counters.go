package adaptertest

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

const ruleIncrementCreatesAndAdds = "Increment adds by to the counter at key in one atomic step; when the counter does not exist it is created with value by and expiry ttl; Get reads a counter in decimal"

func storageIncrementCreatesAndAdds(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	c, err := f.s.Increment(ctx, "n", 3, ttl)
	if err != nil || c.Value != 3 {
		t.Fatalf("Increment of a missing counter = %+v, %v; want value 3", c, err)
	}
	f.checkTTL(t, "a new counter", c.TTL, ttl)
	wantValue(t, f, "n", "3")
	for _, step := range []struct{ by, want int64 }{{4, 7}, {-10, -3}, {0, -3}, {1 << 40, 1<<40 - 3}} {
		c, err := f.s.Increment(ctx, "n", step.by, ttl)
		if err != nil || c.Value != step.want {
			t.Fatalf("Increment by %d = %+v, %v; want value %d", step.by, c, err, step.want)
		}
	}
	wantValue(t, f, "n", strconv.FormatInt(1<<40-3, 10))
	if c, err := f.s.Increment(ctx, "neg", -2, ttl); err != nil || c.Value != -2 {
		t.Fatalf("Increment by -2 of a missing counter = %+v, %v; want -2", c, err)
	}
	wantValue(t, f, "neg", "-2")
}

const ruleIncrementKeepsExpiry = "an existing counter's expiry is never extended (a fixed window): it ends ttl after its creation whatever later increments ask, and the next increment creates it afresh"

func storageIncrementKeepsExpiry(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	written := f.now()
	c, err := f.s.Increment(ctx, "n", 2, ttl)
	if err != nil || c.Value != 2 {
		t.Fatalf("first Increment = %+v, %v; want 2", c, err)
	}
	f.checkTTL(t, "the first Increment", c.TTL, ttl)
	left := ttl
	if f.caps.ManualClock {
		f.advance(ttl * 2 / 5)
		left = ttl - ttl*2/5
	}
	// A far longer ttl on an existing counter must change nothing.
	c, err = f.s.Increment(ctx, "n", 3, time.Hour)
	if err != nil || c.Value != 5 {
		if f.stalled(t, written, ttl) {
			return
		}
		t.Fatalf("second Increment = %+v, %v; want 5", c, err)
	}
	f.checkTTL(t, "an Increment asking for an hour on an existing counter", c.TTL, left)
	f.expires(t, written, ttl, "n")
	c, err = f.s.Increment(ctx, "n", 1, ttl)
	if err != nil || c.Value != 1 {
		t.Fatalf("Increment after the counter expired = %+v, %v; want a new counter holding 1", c, err)
	}
	f.checkTTL(t, "the counter created afresh", c.TTL, ttl)
}

const ruleIncrementTTLMustBePositive = "Increment: ttl must be positive; a ttl of 0 or below is core.ErrInvalid and creates nothing (IncrementBounded alike)"

func storageIncrementTTLMustBePositive(t testing.TB, f *storageFixture) {
	b, bounded := f.s.(driver.BoundedIncrementer)
	for _, ttl := range []time.Duration{0, -time.Second} {
		if _, err := f.s.Increment(f.ctx, "n", 1, ttl); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Increment with ttl %v: err = %v; want core.ErrInvalid", ttl, err)
		}
		if bounded {
			if _, _, err := b.IncrementBounded(f.ctx, "n", 1, 10, ttl); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("IncrementBounded with ttl %v: err = %v; want core.ErrInvalid", ttl, err)
			}
		}
	}
	wantAbsent(t, f, "n", "every increment was refused")
}

const ruleIncrementOfText = "Increment adds to a counter: a value set with Set counts as one when it is a decimal integer; any other value is an error and stays as it was"

func storageIncrementOfText(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	if err := f.s.Set(ctx, "num", "41", 0); err != nil {
		t.Fatal(err)
	}
	if c, err := f.s.Increment(ctx, "num", 1, ttl); err != nil || c.Value != 42 {
		t.Fatalf("Increment of a value set as \"41\" = %+v, %v; want 42", c, err)
	}
	wantValue(t, f, "num", "42")
	for _, text := range []string{"hello", "", "1.5", "12abc"} {
		if err := f.s.Set(ctx, "text", text, 0); err != nil {
			t.Fatal(err)
		}
		if c, err := f.s.Increment(ctx, "text", 1, ttl); err == nil {
			t.Errorf("Increment of %q succeeded with %+v; want an error", text, c)
		}
		if b, ok := f.s.(driver.BoundedIncrementer); ok {
			if c, ok, err := b.IncrementBounded(ctx, "text", 1, 100, ttl); err == nil {
				t.Errorf("IncrementBounded of %q = %+v, %v, nil; want an error", text, c, ok)
			}
		}
		wantValue(t, f, "text", text)
	}
}

const ruleBoundedUpToMax = "driver.BoundedIncrementer: add by only when the result stays at or below max; ok is false when it would not fit, and c then holds the current, unchanged counter"

func storageBoundedUpToMax(t testing.TB, f *storageFixture) {
	b := f.s.(driver.BoundedIncrementer)
	for i, step := range []struct {
		by, max, value int64
		ok             bool
	}{
		{2, 5, 2, true},
		{2, 5, 4, true},
		{2, 5, 4, false}, // 6 > 5
		{1, 5, 5, true},  // at max fits
		{1, 5, 5, false},
		{1, 7, 6, true}, // max is per call
		{-6, 7, 0, true},
	} {
		c, ok, err := b.IncrementBounded(f.ctx, "b", step.by, step.max, f.ttl())
		if err != nil || ok != step.ok || c.Value != step.value {
			t.Fatalf("step %d: IncrementBounded(by %d, max %d) = %+v, %v, %v; want value %d, ok %v", i, step.by, step.max, c, ok, err, step.value, step.ok)
		}
	}
	wantValue(t, f, "b", "0")
}

const ruleBoundedRefusal = "driver.BoundedIncrementer: a denied request leaves the counter as it was, value and expiry (Value 0 when absent, and an absent counter is not created); a bounded increment of 0 with max -1 therefore reads the counter and its TTL"

func storageBoundedRefusal(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	b := f.s.(driver.BoundedIncrementer)
	for _, call := range []struct{ by, max int64 }{{5, 4}, {0, -1}} {
		c, ok, err := b.IncrementBounded(ctx, "fresh", call.by, call.max, ttl)
		if err != nil || ok || c != (driver.Counter{}) {
			t.Fatalf("IncrementBounded(by %d, max %d) of a missing counter = %+v, %v, %v; want the zero Counter, false, nil", call.by, call.max, c, ok, err)
		}
		wantAbsent(t, f, "fresh", "a refused increment must not create the counter")
	}
	written := f.now()
	if _, ok, err := b.IncrementBounded(ctx, "b", 3, 3, ttl); !ok || err != nil {
		t.Fatalf("IncrementBounded(by 3, max 3) of a missing counter: ok %v, err %v; want admitted", ok, err)
	}
	left := ttl
	if f.caps.ManualClock {
		f.advance(time.Second)
		left = ttl - time.Second
	}
	for _, call := range []struct{ by, max int64 }{{1, 3}, {0, -1}, {10, 12}} {
		c, ok, err := b.IncrementBounded(ctx, "b", call.by, call.max, time.Hour)
		if err != nil || ok || c.Value != 3 {
			if f.stalled(t, written, ttl) {
				return
			}
			t.Fatalf("IncrementBounded(by %d, max %d) of a counter at 3 = %+v, %v, %v; want value 3, false, nil", call.by, call.max, c, ok, err)
		}
		f.checkTTL(t, fmt.Sprintf("a refused IncrementBounded(by %d, max %d)", call.by, call.max), c.TTL, left)
		wantValue(t, f, "b", "3")
	}
}

const ruleBoundedKeepsExpiry = "driver.BoundedIncrementer creates the counter with expiry ttl and, as Increment, never extends an existing counter's expiry; a refusal leaves it as it was"

func storageBoundedKeepsExpiry(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	b := f.s.(driver.BoundedIncrementer)
	written := f.now()
	c, ok, err := b.IncrementBounded(ctx, "b", 1, 10, ttl)
	if err != nil || !ok || c.Value != 1 {
		t.Fatalf("first IncrementBounded = %+v, %v, %v; want 1 admitted", c, ok, err)
	}
	f.checkTTL(t, "the counter IncrementBounded created", c.TTL, ttl)
	left := ttl
	if f.caps.ManualClock {
		f.advance(ttl / 2)
		left = ttl - ttl/2
	}
	c, ok, err = b.IncrementBounded(ctx, "b", 1, 10, time.Hour)
	if err != nil || !ok || c.Value != 2 {
		if f.stalled(t, written, ttl) {
			return
		}
		t.Fatalf("second IncrementBounded = %+v, %v, %v; want 2 admitted", c, ok, err)
	}
	f.checkTTL(t, "an IncrementBounded asking for an hour on an existing counter", c.TTL, left)
	// Refusals, a peek among them, must leave the expiry alone too.
	for _, call := range []struct{ by, max int64 }{{100, 10}, {0, -1}} {
		if c, ok, err := b.IncrementBounded(ctx, "b", call.by, call.max, time.Hour); err != nil || ok || c.Value != 2 {
			if f.stalled(t, written, ttl) {
				return
			}
			t.Fatalf("IncrementBounded(by %d, max %d) of a counter at 2 = %+v, %v, %v; want 2, refused", call.by, call.max, c, ok, err)
		}
	}
	f.expires(t, written, ttl, "b")
	if c, ok, err := b.IncrementBounded(ctx, "b", 1, 10, ttl); err != nil || !ok || c.Value != 1 {
		t.Fatalf("IncrementBounded after the counter expired = %+v, %v, %v; want a new counter holding 1", c, ok, err)
	}
}
