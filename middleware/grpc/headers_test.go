package sluicegrpc_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicegrpc "github.com/sluice-go/sluice/middleware/grpc"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Under sluicehttp.HeadersIETF the metadata are the draft's fields as the
// HTTP middleware writes them, and a denial's ErrorInfo names the rule
// that denied.
func TestRateLimitIETFMetadata(t *testing.T) {
	clk := newClock()
	limiter, _ := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(clk.Now))
	unary, _ := rateLimited(t, &health{}, sluicegrpc.Config{Limiter: limiter, Headers: sluicehttp.HeadersIETF,
		Default: ratelimit.Rule{Name: "burst", Window: time.Minute, Max: 1}})
	c := unary()
	wantMeta(t, "allowed", c, map[string]string{sluicegrpc.MetadataPolicy: `"burst";q=1;w=60`, sluicegrpc.MetadataRateLimit: `"burst";r=0;t=60`,
		sluicegrpc.MetadataLimit: "", sluicegrpc.MetadataRetryAfter: ""})
	clk.Advance(15 * time.Second)
	c = unary()
	if c.code() != codes.ResourceExhausted {
		t.Fatalf("second call: %v", c.err)
	}
	wantMeta(t, "denied", c, map[string]string{sluicegrpc.MetadataRateLimit: `"burst";r=0;t=45`, sluicegrpc.MetadataRetryAfter: "45",
		"x-retry-after": ""})
	var violated string
	for _, d := range status.Convert(c.err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			violated = info.Metadata[sluicegrpc.MetadataViolatedPolicies]
		}
	}
	if violated != "burst" {
		t.Errorf("ErrorInfo violated-policies %q, want burst", violated)
	}
}

// Under sluicehttp.HeadersIETF every rule's window must be whole seconds,
// Methods' as Default's.
func TestRateLimitIETFWholeSeconds(t *testing.T) {
	limiter, _ := ratelimit.New(ratelimit.Memory(1000))
	odd := ratelimit.Rule{Window: 1500 * time.Millisecond, Max: 1}
	for _, cfg := range []sluicegrpc.Config{
		{Limiter: limiter, Headers: sluicehttp.HeadersIETF, Default: odd},
		{Limiter: limiter, Headers: sluicehttp.HeadersIETF, Default: ratelimit.Unlimited, Methods: map[string]ratelimit.Rule{"/a.B/C": odd}},
	} {
		_, err := sluicegrpc.UnaryRateLimit(cfg)
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "rule window 1.5s is not a whole number of seconds") {
			t.Errorf("%+v: %v", cfg, err)
		}
		cfg.Headers = sluicehttp.HeadersDefault
		if _, err := sluicegrpc.UnaryRateLimit(cfg); err != nil {
			t.Errorf("default style: %v", err)
		}
	}
}

// A method's policy: every rule in the metadata, the denying one in the
// ErrorInfo.
func TestRateLimitPolicyMetadata(t *testing.T) {
	clk := newClock()
	limiter, _ := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(clk.Now))
	unary, _ := rateLimited(t, &health{}, sluicegrpc.Config{Limiter: limiter, Headers: sluicehttp.HeadersIETF, Default: ratelimit.Unlimited,
		Policies: map[string]ratelimit.Policy{"/grpc.health.v1.Health/*": {
			{Name: "burst", Window: 10 * time.Second, Max: 1}, {Name: "daily", Window: 24 * time.Hour, Max: 100}}}})
	c := unary()
	wantMeta(t, "allowed", c, map[string]string{sluicegrpc.MetadataPolicy: `"burst";q=1;w=10, "daily";q=100;w=86400`,
		sluicegrpc.MetadataRateLimit: `"burst";r=0;t=10, "daily";r=99;t=86400`})
	clk.Advance(4 * time.Second)
	c = unary()
	if c.code() != codes.ResourceExhausted || c.retryDelay() != 6*time.Second {
		t.Fatalf("second call: %v", c.err)
	}
	wantMeta(t, "denied", c, map[string]string{sluicegrpc.MetadataRateLimit: `"burst";r=0;t=6, "daily";r=99;t=86396`, sluicegrpc.MetadataRetryAfter: "6"})
	for _, d := range status.Convert(c.err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Metadata[sluicegrpc.MetadataViolatedPolicies] != "burst" {
			t.Errorf("ErrorInfo %v, want violated-policies burst", info.Metadata)
		}
	}
	_, err := sluicegrpc.UnaryRateLimit(sluicegrpc.Config{Limiter: limiter, Default: ratelimit.Unlimited,
		Methods: map[string]ratelimit.Rule{"/a.B/C": {Window: time.Second, Max: 1}}, Policies: map[string]ratelimit.Policy{"/a.B/C": {}}})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), `Config.Policies["/a.B/C"]: the method is in Methods too`) {
		t.Errorf("a method in both: %v", err)
	}
	_, err = sluicegrpc.UnaryRateLimit(sluicegrpc.Config{Limiter: limiter, Default: ratelimit.Unlimited,
		Policies: map[string]ratelimit.Policy{"/a.B/C": {{Name: "x", Window: time.Second, Max: 1}, {Name: "x", Window: time.Minute, Max: 1}}}})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), `Config.Policies["/a.B/C"]: ratelimit: invalid request: policy rules 0 and 1 are both named "x"`) {
		t.Errorf("duplicate names: %v", err)
	}
}
