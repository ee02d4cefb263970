package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// Reset clears a client that is at its limit, on every storage, with the
// denial cache on: the next request opens a new window at once, and other
// keys keep their counts.
func TestResetClearsOneKey(t *testing.T) {
	ctx := context.Background()
	rule := ratelimit.Rule{Window: time.Minute, Max: 2}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now))
		for _, key := range []string{"client", "other"} {
			for range 2 {
				if d, err := l.Consume(ctx, key, rule); err != nil || !d.Allowed {
					t.Fatalf("Consume(%q) = %+v, %v", key, d, err)
				}
			}
		}
		c.Set(10 * time.Second)
		if d, err := l.Consume(ctx, "client", rule); err != nil || d.Allowed {
			t.Fatalf("third Consume = %+v, %v; want denied", d, err)
		}
		if err := l.Reset(ctx, "client"); err != nil {
			t.Fatalf("Reset: %v", err)
		}
		d, err := l.Consume(ctx, "client", rule)
		want := ratelimit.Decision{Allowed: true, Limit: 2, Remaining: 1, Reset: t0.Add(70 * time.Second)}
		if err != nil || !reflect.DeepEqual(d, want) {
			t.Fatalf("Consume after Reset = %+v, %v; want %+v", d, err, want)
		}
		if d, err := l.Consume(ctx, "other", rule); err != nil || d.Allowed {
			t.Errorf("Consume(other) after Reset(client) = %+v, %v; want still denied", d, err)
		}
		if err := l.Reset(ctx, "never-seen"); err != nil {
			t.Errorf("Reset of a key without a counter: %v", err)
		}
	})
}

func TestResetRefusesBadKeys(t *testing.T) {
	for _, b := range backends(t) {
		l := newLimiter(t, b.storage(newClock()))
		for _, key := range []string{"", "a\x00b", "a\xffb"} {
			if err := l.Reset(context.Background(), key); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%s: Reset(%q) = %v, want ErrInvalid", b.name, key, err)
			}
		}
	}
	var zero *ratelimit.Limiter
	if err := zero.Reset(context.Background(), "k"); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("nil Limiter: Reset = %v, want ErrInvalid", err)
	}
}

func ExampleLimiter_Reset() {
	ctx := context.Background()
	limiter, _ := ratelimit.New(ratelimit.Memory(1000))
	rule, _ := ratelimit.ParseRule("1-H")
	d1, _ := limiter.Consume(ctx, "user:42", rule)
	d2, _ := limiter.Consume(ctx, "user:42", rule)
	_ = limiter.Reset(ctx, "user:42") // an operator forgives the client
	d3, _ := limiter.Consume(ctx, "user:42", rule)
	fmt.Println(d1.Allowed, d2.Allowed, d3.Allowed)
	// Output: true false true
}

func ExampleParseRule() {
	for _, s := range []string{"100-M", "5/30s", "unlimited"} {
		r, err := ratelimit.ParseRule(s)
		fmt.Printf("%s: %d per %v %v\n", s, r.Max, r.Window, err)
	}
	_, err := ratelimit.ParseRule("100-W")
	fmt.Println(err)
	// Output:
	// 100-M: 100 per 1m0s <nil>
	// 5/30s: 5 per 30s <nil>
	// unlimited: -1 per 0s <nil>
	// ratelimit: invalid request: rule "100-W": unit "W" is not one of S, M, H, D
}
