package ratelimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

func TestStorageFailureFailsClosedByDefault(t *testing.T) {
	for _, open := range []bool{false, true} {
		var opts []ratelimit.Option
		if open {
			opts = append(opts, ratelimit.WithFailOpen())
		}
		down, _ := core.New(broken{memory.New()})
		l := newLimiter(t, ratelimit.Database(down), opts...)
		d, err := l.Consume(context.Background(), "k", rule3)
		if !errors.Is(err, errBroken) {
			t.Fatalf("fail open %v: err = %v, want the storage error", open, err)
		}
		if d.Allowed != open {
			t.Errorf("fail open %v: allowed = %v", open, d.Allowed)
		}
		// Bad input is denied whatever the policy, whether the limiter or
		// the storage refuses it.
		db, _ := core.New(memory.New())
		l = newLimiter(t, ratelimit.Database(db), opts...)
		for _, key := range []string{"", strings.Repeat("k", 300)} {
			if d, err := l.Consume(context.Background(), key, rule3); !errors.Is(err, core.ErrInvalid) || d.Allowed {
				t.Errorf("fail open %v: key of %d bytes gave %+v, %v; want denied with ErrInvalid", open, len(key), d, err)
			}
		}
	}
}

// racer is an adapter that always loses: its guarded writes never match,
// yet every read shows room in a live window.
type racer struct{ *memory.Memory }

func (r racer) IncrementOne(ctx context.Context, t *driver.Table, _ []driver.Where, _ []driver.Delta, _ []driver.Assignment) (driver.Record, error) {
	_, err := r.Memory.Count(ctx, t, nil) // counts the round trip
	return nil, err
}

func (r racer) FindOne(ctx context.Context, t *driver.Table, _ []driver.Where) (driver.Record, error) {
	_, _ = r.Memory.Count(ctx, t, nil) // counts the round trip
	rec := driver.Record{}
	for _, c := range t.Columns {
		rec[c.Name] = int64(0)
	}
	rec[t.Columns[1].Name] = "k"
	if c, ok := t.Column("lastRequest"); ok {
		rec[c.Name] = t0.UnixMilli()
	}
	return rec, nil
}

func TestRetriesAreBounded(t *testing.T) {
	m := memory.New()
	db, err := core.New(racer{m})
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithMaxAttempts(4))
	d, err := l.Consume(context.Background(), "k", rule3)
	if !errors.Is(err, core.ErrContention) || d.Allowed {
		t.Fatalf("endless races: %+v, %v; want denied with ErrContention", d, err)
	}
	if got := m.Calls(); got != 4*2 {
		t.Errorf("%d round trips, want 8: an increment and a read per attempt", got)
	}
	// The context ends the retries sooner.
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	if _, err := l.Consume(ctx, "k", rule3); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("expired context: %v, want DeadlineExceeded", err)
	}
}
