package ratelimit_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// slowDB is the memory adapter with its IncrementOne calls counted and
// made to take a round trip: a time.Sleep(rtt), about 1.2–1.5 ms on a
// virtual machine whatever rtt below a millisecond. With rowLock the
// writes also hold one lock for the whole round trip, as a database holds
// a hot row's lock until the write commits; without it, writes to one row
// overlap freely, the best case for deciding without combining.
type slowDB struct {
	*memory.Memory
	rtt     time.Duration
	rowLock *sync.Mutex // nil: writes overlap
	writes  *atomic.Int64
}

func (s slowDB) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	s.writes.Add(1)
	if s.rowLock != nil {
		s.rowLock.Lock()
		defer s.rowLock.Unlock()
	}
	if s.rtt > 0 {
		time.Sleep(s.rtt)
	}
	return s.Memory.IncrementOne(ctx, t, where, inc, set)
}

// BenchmarkHotKey measures 32 goroutines deciding on one key, every
// request admitted, with and without write combining: on the memory
// adapter as it is (a write is a map update under a lock), and with a
// 1 ms round trip per write, overlapping or serialised on the row; and
// one goroutine on the memory adapter, the cost of combining when there is
// nothing to combine. writes/op is IncrementOne calls per decision.
func BenchmarkHotKey(b *testing.B) {
	for _, db := range []struct {
		name       string
		rtt        time.Duration
		rowLock    bool
		goroutines int
	}{
		{"memory/goroutines=1", 0, false, 1},
		{"memory", 0, false, 32},
		{"rtt=1ms", time.Millisecond, false, 32},
		{"rtt=1ms+rowlock", time.Millisecond, true, 32},
	} {
		for _, combine := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/combining=%v", db.name, combine), func(b *testing.B) {
				var writes atomic.Int64
				a := slowDB{Memory: memory.New(), rtt: db.rtt, writes: &writes}
				if db.rowLock {
					a.rowLock = new(sync.Mutex)
				}
				cdb, err := core.New(a)
				if err != nil {
					b.Fatal(err)
				}
				c := newClock()
				opts := []ratelimit.Option{ratelimit.WithClock(c.Now)}
				if combine {
					opts = append(opts, ratelimit.WithWriteCombining())
				}
				l, err := ratelimit.New(ratelimit.Database(cdb), opts...)
				if err != nil {
					b.Fatal(err)
				}
				rule := ratelimit.Rule{Window: time.Hour, Max: 1 << 62}
				ctx := context.Background()
				if _, err := l.Consume(ctx, "hot", rule); err != nil { // opens the window
					b.Fatal(err)
				}
				before := writes.Load()
				b.ReportAllocs()
				b.ResetTimer()
				if db.goroutines == 1 {
					for b.Loop() {
						if d, err := l.Consume(ctx, "hot", rule); err != nil || !d.Allowed {
							b.Fatalf("%+v, %v", d, err)
						}
					}
					b.ReportMetric(float64(writes.Load()-before)/float64(b.N), "writes/op")
					return
				}
				b.SetParallelism(max(1, db.goroutines/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if d, err := l.Consume(ctx, "hot", rule); err != nil || !d.Allowed {
							b.Errorf("%+v, %v", d, err)
							return
						}
					}
				})
				b.ReportMetric(float64(writes.Load()-before)/float64(b.N), "writes/op")
			})
		}
	}
}
