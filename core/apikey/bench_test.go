package apikey

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/memory"
)

// BenchmarkVerify reports adapter calls per verification (calls/op): 1 in
// steady state, the guarded write planned on the remembered key.
func BenchmarkVerify(b *testing.B) {
	e := newEnv(b)
	key, _ := e.create(b, CreateParams{Remaining: quota(1 << 40), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 1 << 40}})
	ctx := context.Background()
	before := e.mem.Calls()
	b.ResetTimer()
	for b.Loop() {
		r, err := e.m.Verify(ctx, key)
		if err != nil || !r.Valid {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(e.mem.Calls()-before)/float64(b.N), "calls/op")
}

// BenchmarkVerifyReadFirst is BenchmarkVerify with the key-state cache off:
// 2 calls, a read and a guarded write.
func BenchmarkVerifyReadFirst(b *testing.B) {
	e := newEnv(b, WithKeyStateCache(0))
	key, _ := e.create(b, CreateParams{Remaining: quota(1 << 40), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 1 << 40}})
	ctx := context.Background()
	before := e.mem.Calls()
	b.ResetTimer()
	for b.Loop() {
		if r, err := e.m.Verify(ctx, key); err != nil || !r.Valid {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(e.mem.Calls()-before)/float64(b.N), "calls/op")
}

// BenchmarkVerifyCached reports database calls per verification with the
// key cached: 1, the guarded write.

func BenchmarkVerifyCached(b *testing.B) {
	e := newEnv(b, WithCache(memory.NewStorage(), time.Hour))
	key, _ := e.create(b, CreateParams{Remaining: quota(1 << 40), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 1 << 40}})
	ctx := context.Background()
	e.verify(b, key)
	before := e.mem.Calls()
	b.ResetTimer()
	for b.Loop() {
		if r, err := e.m.Verify(ctx, key); err != nil || !r.Valid {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(e.mem.Calls()-before)/float64(b.N), "db-calls/op")
}

// BenchmarkVerifyStorageOnly measures one atomic claim per verification.
func BenchmarkVerifyStorageOnly(b *testing.B) {
	m, _, _ := newStoreEnv(b)
	ctx := context.Background()
	key, _, err := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(1 << 40), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 1 << 40}})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if r, err := m.Verify(ctx, key); err != nil || !r.Valid {
			b.Fatal(r, err)
		}
	}
}
