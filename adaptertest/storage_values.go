package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

// mustGet reads key, failing the test on an error.
func mustGet(t testing.TB, f *storageFixture, key string) (string, bool) {
	t.Helper()
	v, ok, err := f.s.Get(f.ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return v, ok
}

func wantValue(t testing.TB, f *storageFixture, key, want string) {
	t.Helper()
	if v, ok := mustGet(t, f, key); !ok || v != want {
		t.Fatalf("Get(%q) = %s, present %v; want %s", key, short(v), ok, short(want))
	}
}

func wantAbsent(t testing.TB, f *storageFixture, key, why string) {
	t.Helper()
	if v, ok := mustGet(t, f, key); ok {
		t.Fatalf("Get(%q) = %s; want no value: %s", short(key), short(v), why)
	}
}

// short quotes s, cut to a readable length.
func short(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%q… (%d bytes)", s[:60], len(s))
	}
	return strconv.Quote(s)
}

const ruleGetSetDelete = "Get returns the value at key and ok == false when there is none; Set stores value at key, replacing what was there; Delete removes key; a missing key is not an error"

func storageGetSetDelete(t testing.TB, f *storageFixture) {
	ctx := f.ctx
	if v, ok, err := f.s.Get(ctx, "k"); v != "" || ok || err != nil {
		t.Fatalf("Get of a missing key = %q, %v, %v; want \"\", false, nil", v, ok, err)
	}
	if err := f.s.Set(ctx, "k", "v1", 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	wantValue(t, f, "k", "v1")
	if err := f.s.Set(ctx, "k", "v2", f.ttl()); err != nil {
		t.Fatalf("Set over a value: %v", err)
	}
	wantValue(t, f, "k", "v2")
	if err := f.s.Delete(ctx, "k"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantAbsent(t, f, "k", "it was deleted")
	if err := f.s.Delete(ctx, "k"); err != nil {
		t.Fatalf("Delete of a missing key: %v; want nil", err)
	}
	if err := f.s.Delete(ctx, "never-there"); err != nil {
		t.Fatalf("Delete of a key never written: %v; want nil", err)
	}
	// A counter is a value like another: Set replaces it, Delete removes it.
	if _, err := f.s.Increment(ctx, "c", 5, f.ttl()); err != nil {
		t.Fatalf("Increment: %v", err)
	}
	if err := f.s.Set(ctx, "c", "text", 0); err != nil {
		t.Fatalf("Set over a counter: %v", err)
	}
	wantValue(t, f, "c", "text")
	if err := f.s.Delete(ctx, "c"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if c, err := f.s.Increment(ctx, "c", 1, f.ttl()); err != nil || c.Value != 1 {
		t.Fatalf("Increment after Delete = %+v, %v; want a new counter holding 1", c, err)
	}
}

const ruleSetExpires = "Set stores value at key; ttl 0 means no expiry: a value with a TTL is there until the TTL ends and gone from then on, one set with ttl 0 (over one that had a TTL, too) never expires"

func storageSetExpires(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	written := f.now()
	for _, k := range []string{"brief", "renewed"} {
		if err := f.s.Set(ctx, k, "v", ttl); err != nil {
			t.Fatalf("Set(%q) with TTL %v: %v", k, ttl, err)
		}
	}
	for _, k := range []string{"forever", "renewed"} {
		if err := f.s.Set(ctx, k, "w", 0); err != nil {
			t.Fatalf("Set(%q) with ttl 0: %v", k, err)
		}
	}
	if _, ok := mustGet(t, f, "brief"); !ok && !f.stalled(t, written, ttl) {
		t.Fatalf("Get(brief) right after Set with TTL %v: gone after %v", ttl, f.now()-written)
	}
	f.expires(t, written, ttl, "brief")
	if f.caps.ManualClock {
		f.advance(365 * 24 * time.Hour)
	}
	wantValue(t, f, "forever", "w")
	wantValue(t, f, "renewed", "w")
}

// hostileKeys are keys a storage must keep apart and give back byte for
// byte. The pairs that differ only by trailing space, case or Unicode
// normalisation would merge under a collation or a normalising layer.
func hostileKeys() []string {
	return []string{
		"", " ", "a", "a ", "A", "\u00e9", "e\u0301", "\uff4b", "k",
		"\x00", "a\x00b", "\xff\xfe\xfd", "\xc3", "line\nbreak\r\n", "tab\t",
		"{tag}x", "{tag}y", "*?[a-z]\\", "ratelimit:x", "../x", "%s%d", "'; DROP TABLE x; --",
		"🔑 ключ 鍵 مفتاح", "\u202eRTL", strings.Repeat("long", 16*1024),
	}
}

// hostileValue is the distinct value stored at hostileKeys()[i].
func hostileValue(i int) string {
	switch i % 5 {
	case 0:
		return "" // present and empty, not absent
	case 1:
		return fmt.Sprintf("\x00%d\xff\xfe", i)
	case 2:
		return fmt.Sprintf("%d:%s", i, strings.Repeat("\u00e9\x00", 32*1024))
	default:
		return fmt.Sprintf("value %d 🔑 \"quoted\"", i)
	}
}

const ruleHostileKeysAndValues = "a key or value is any string, byte for byte: empty, binary (NUL, invalid UTF-8), 64 KiB long, Unicode, glob and hash-tag characters; keys that differ only by trailing spaces, case or Unicode normalisation stay distinct"

func storageHostileKeys(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	keys := hostileKeys()
	for i, k := range keys {
		if err := f.s.Set(ctx, k, hostileValue(i), 0); err != nil {
			t.Fatalf("Set(%s): %v", short(k), err)
		}
	}
	for i, k := range keys {
		wantValue(t, f, k, hostileValue(i))
	}
	for i, k := range keys {
		if i%2 == 0 {
			if err := f.s.Delete(ctx, k); err != nil {
				t.Fatalf("Delete(%s): %v", short(k), err)
			}
		}
	}
	for i, k := range keys {
		if i%2 == 0 {
			wantAbsent(t, f, k, "it was deleted")
		} else {
			wantValue(t, f, k, hostileValue(i))
		}
	}
	for i, k := range keys {
		if err := f.s.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%s): %v", short(k), err)
		}
		by := int64(i + 1)
		if c, err := f.s.Increment(ctx, k, by, ttl); err != nil || c.Value != by {
			t.Fatalf("Increment(%s) by %d = %+v, %v; want a new counter holding %d", short(k), by, c, err, by)
		}
	}
	for i, k := range keys {
		wantValue(t, f, k, strconv.Itoa(i+1))
	}
}

const ruleContextDone = "a call whose context is already cancelled or past its deadline returns an error wrapping the context's error and changes nothing"

func storageContextDone(t testing.TB, f *storageFixture) {
	ttl := f.ttl()
	cancelled, cancel := context.WithCancel(f.ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(f.ctx, time.Now().Add(-time.Second))
	defer cancel2()
	if err := f.s.Set(f.ctx, "kept", "v", 0); err != nil {
		t.Fatal(err)
	}
	record := `{"enabled":true,"remaining":5}`
	if err := f.s.Set(f.ctx, "record", record, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		check := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, c.want) {
				t.Errorf("%s on a context that is done: err = %v; want one wrapping %v", op, err, c.want)
			}
		}
		_, _, err := f.s.Get(c.ctx, "kept")
		check("Get", err)
		check("Set", f.s.Set(c.ctx, "new", "v", 0))
		check("Set", f.s.Set(c.ctx, "kept", "changed", 0))
		check("Delete", f.s.Delete(c.ctx, "kept"))
		_, err = f.s.Increment(c.ctx, "counter", 1, ttl)
		check("Increment", err)
		if b, ok := f.s.(driver.BoundedIncrementer); ok {
			_, _, err = b.IncrementBounded(c.ctx, "counter", 1, 10, ttl)
			check("IncrementBounded", err)
		}
		if cl, ok := f.s.(keystore.Claimer); ok {
			_, err = cl.Claim(c.ctx, "record", keystore.Request{Now: claimBase, Cost: 1})
			check("Claim", err)
			_, _, err = cl.Patch(c.ctx, "record", map[string]any{"remaining": int64(1)})
			check("Patch", err)
		}
	}
	wantAbsent(t, f, "new", "Set was called on a context that was done")
	wantAbsent(t, f, "counter", "Increment was called on a context that was done")
	wantValue(t, f, "kept", "v")
	wantValue(t, f, "record", record)
}
