package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// benchDB returns a limiter on a database storage and the adapter's call count.
func benchDB(b *testing.B, fallback bool) (*ratelimit.Limiter, func() int64) {
	m := memory.New()
	var a driver.Adapter = m
	if fallback {
		a = m.WithoutIncrementOne()
	}
	db, err := core.New(a)
	if err != nil {
		b.Fatal(err)
	}
	c := newClock()
	l, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(c.Now))
	if err != nil {
		b.Fatal(err)
	}
	return l, m.Calls
}

// BenchmarkAllowed reports the round trips of an allowed request in steady
// state: 1 natively (the in-window increment), 3 through the fallback's
// transaction (read, guarded write, read back).
func BenchmarkAllowed(b *testing.B) {
	for _, fallback := range []bool{false, true} {
		name := "native"
		if fallback {
			name = "fallback"
		}
		b.Run(name, func(b *testing.B) {
			l, calls := benchDB(b, fallback)
			ctx := context.Background()
			rule := ratelimit.Rule{Window: time.Hour, Max: 1 << 62}
			if _, err := l.Consume(ctx, "k", rule); err != nil { // opens the window
				b.Fatal(err)
			}
			before := calls()
			b.ResetTimer()
			for b.Loop() {
				if d, err := l.Consume(ctx, "k", rule); err != nil || !d.Allowed {
					b.Fatalf("%+v, %v", d, err)
				}
			}
			b.ReportMetric(float64(calls()-before)/float64(b.N), "roundtrips/op")
		})
	}
}

// BenchmarkRepeatedDenial reports the round trips of a denial of a key
// already known to be full: 0, thanks to the denial cache.
func BenchmarkRepeatedDenial(b *testing.B) {
	l, calls := benchDB(b, false)
	ctx := context.Background()
	rule := ratelimit.Rule{Window: time.Hour, Max: 1}
	for i := 0; i < 2; i++ { // fill, then learn the denial
		_, _ = l.Consume(ctx, "k", rule)
	}
	before := calls()
	b.ResetTimer()
	for b.Loop() {
		if d, err := l.Consume(ctx, "k", rule); err != nil || d.Allowed {
			b.Fatalf("%+v, %v", d, err)
		}
	}
	b.ReportMetric(float64(calls()-before)/float64(b.N), "roundtrips/op")
}

// BenchmarkMemoryParallel measures the sharded memory storage under load.
func BenchmarkMemoryParallel(b *testing.B) {
	l, err := ratelimit.New(ratelimit.Memory(1 << 16))
	if err != nil {
		b.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 1 << 62}
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_, _ = l.Consume(context.Background(), keys[i%len(keys)], rule)
			i++
		}
	})
}
