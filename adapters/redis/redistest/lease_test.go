package redistest_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// untaggedReturn is a deliberately broken lease return: it subtracts the
// units from whatever counter is at the key now, without the tag or count
// guard.
type untaggedReturn struct{ *sluiceredis.Storage }

func (u untaggedReturn) ReturnClaimed(ctx context.Context, key string, n, _ int64) (bool, error) {
	_, ok, err := u.IncrementBounded(ctx, key, -n, 1<<50, time.Minute)
	return ok, err
}

// leaseReturns runs leases on st and checks what goes back to Redis: the
// rest of a lease at Close and after its lease time (Prune), and nothing
// when the counter was reset and created anew by another limiter since
// the lease was claimed (its tag differs: the other limiter's window is
// two minutes, so its counter's expiry is another).
func leaseReturns(ctx context.Context, run string, st interface {
	driver.SecondaryStorage
	driver.BoundedIncrementer
}) error {
	now := time.UnixMilli(1_800_000_000_000)
	clock := func() time.Time { return now }
	rule := ratelimit.Rule{Window: time.Minute, Max: 100}
	stored := func(key string) (int64, error) {
		v, _, err := st.Get(ctx, ratelimit.SecondaryPrefix+key)
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(v, 10, 64)
	}
	leased := func(opts ...ratelimit.Option) (*ratelimit.Limiter, error) {
		return ratelimit.New(ratelimit.Secondary(st), append([]ratelimit.Option{ratelimit.WithClock(clock), ratelimit.WithLeases(64)}, opts...)...)
	}
	want := func(key string, n int64) error {
		if got, err := stored(key); err != nil || got != n {
			return fmt.Errorf("counter %s holds %d (%v), want %d", key, got, err, n)
		}
		return nil
	}

	// Close returns the rest of a lease.
	a, err := leased()
	if err != nil {
		return err
	}
	if d, err := a.Consume(ctx, run+"close", rule); err != nil || !d.Allowed {
		return fmt.Errorf("consume: %+v, %v", d, err)
	}
	if a.Leased() != 7 {
		return fmt.Errorf("leased %d after one request, want 7 (a first block of 64/8)", a.Leased())
	}
	if err := want(run+"close", 8); err != nil {
		return err
	}
	if err := a.Close(); err != nil {
		return err
	}
	if err := want(run+"close", 1); err != nil {
		return fmt.Errorf("after Close: %w", err)
	}

	// A lease unused for its lease time goes back at Prune.
	p, err := leased(ratelimit.WithLeaseTime(time.Second))
	if err != nil {
		return err
	}
	defer p.Close()
	if d, err := p.Consume(ctx, run+"prune", rule); err != nil || !d.Allowed {
		return fmt.Errorf("consume: %+v, %v", d, err)
	}
	now = now.Add(time.Second)
	if _, err := p.Prune(ctx); err != nil {
		return err
	}
	if err := want(run+"prune", 1); err != nil {
		return fmt.Errorf("after Prune: %w", err)
	}
	if p.Leased() != 0 {
		return fmt.Errorf("leased %d after Prune, want 0", p.Leased())
	}

	// A counter reset and created anew is not credited with the units of
	// the one the lease was claimed from.
	r, err := leased()
	if err != nil {
		return err
	}
	if d, err := r.Consume(ctx, run+"reset", rule); err != nil || !d.Allowed {
		return fmt.Errorf("consume: %+v, %v", d, err)
	}
	other, err := ratelimit.New(ratelimit.Secondary(st), ratelimit.WithClock(clock))
	if err != nil {
		return err
	}
	if err := other.Reset(ctx, run+"reset"); err != nil {
		return err
	}
	for range 10 {
		if d, err := other.Consume(ctx, run+"reset", ratelimit.Rule{Window: 2 * time.Minute, Max: 100}); err != nil || !d.Allowed {
			return fmt.Errorf("other's consume: %+v, %v", d, err)
		}
	}
	if err := r.Close(); err != nil {
		return err
	}
	if err := want(run+"reset", 10); err != nil {
		return fmt.Errorf("after a reset and the lease's Close: %w", err)
	}
	return nil
}

// TestLeaseReturns: on Redis a lease's unspent units go back at Close and
// at Prune, to the counter they were claimed from only; a return without
// the tag guard is caught crediting the new counter.
func TestLeaseReturns(t *testing.T) {
	onEachKind(t, func(t *testing.T, s *sluiceredis.Storage, _ redis.UniversalClient, _ func(func(*redis.Client))) {
		if err := leaseReturns(t.Context(), "right-", s); err != nil {
			t.Fatal(err)
		}
		err := leaseReturns(t.Context(), "broken-", untaggedReturn{s})
		if err == nil {
			t.Fatal("a return without the tag guard passed")
		}
		t.Logf("caught: %v", err)
	})
}
