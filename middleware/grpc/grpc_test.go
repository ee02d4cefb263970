package sluicegrpc_test

import (
	"context"
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicegrpc "github.com/sluice-go/sluice/middleware/grpc"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

const (
	checkMethod = "/grpc.health.v1.Health/Check"
	watchMethod = "/grpc.health.v1.Health/Watch"
)

// rateLimited serves h behind both rate-limit interceptors built from cfg.
func rateLimited(t *testing.T, h *health, cfg sluicegrpc.Config) (client func() call, stream func() call) {
	t.Helper()
	unary, err := sluicegrpc.UnaryRateLimit(cfg)
	if err != nil {
		t.Fatal(err)
	}
	streamI, err := sluicegrpc.StreamRateLimit(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, h, grpc.UnaryInterceptor(unary), grpc.StreamInterceptor(streamI))
	return func() call { return check(t, c) }, func() call { return watch(t, c) }
}

func wantMeta(t *testing.T, what string, c call, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := c.meta(k); got != v {
			t.Errorf("%s: metadata %s = %q, want %q", what, k, got, v)
		}
	}
}

func TestUnaryRateLimit(t *testing.T) {
	clk := newClock()
	limiter, err := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	h := &health{}
	unary, watchStream := rateLimited(t, h, sluicegrpc.Config{Limiter: limiter, Default: ratelimit.Rule{Window: time.Minute, Max: 2}})

	for i, remaining := range []string{"1", "0"} {
		c := unary()
		if c.err != nil {
			t.Fatalf("call %d: %v", i+1, c.err)
		}
		wantMeta(t, "allowed", c, map[string]string{sluicegrpc.MetadataLimit: "2", sluicegrpc.MetadataRemaining: remaining,
			sluicegrpc.MetadataReset: "60", sluicegrpc.MetadataRetryAfter: ""})
	}
	clk.Advance(15 * time.Second)
	c := unary()
	if c.code() != codes.ResourceExhausted || c.reason(t) != sluicehttp.CodeRateLimited {
		t.Fatalf("third call: %v, want ResourceExhausted with reason %s", c.err, sluicehttp.CodeRateLimited)
	}
	if d := c.retryDelay(); d != 45*time.Second {
		t.Errorf("RetryInfo delay %v, want 45s", d)
	}
	wantMeta(t, "denied", c, map[string]string{sluicegrpc.MetadataLimit: "2", sluicegrpc.MetadataRemaining: "0",
		sluicegrpc.MetadataReset: "45", sluicegrpc.MetadataRetryAfter: "45"})
	if n := h.checks.Load(); n != 2 {
		t.Errorf("the handler ran %d times, want 2: a denial must not reach it", n)
	}
	// The key holds the method: Watch has a budget of its own.
	if c := watchStream(); c.err != nil {
		t.Errorf("Watch after Check's budget is spent: %v", c.err)
	}
	clk.Advance(45 * time.Second)
	if c := unary(); c.err != nil {
		t.Errorf("after the window: %v", c.err)
	}
}

func TestStreamRateLimit(t *testing.T) {
	clk := newClock()
	limiter, _ := ratelimit.New(ratelimit.Memory(1000), ratelimit.WithClock(clk.Now))
	h := &health{}
	_, stream := rateLimited(t, h, sluicegrpc.Config{Limiter: limiter, Default: ratelimit.Rule{Window: 10 * time.Second, Max: 1}})

	c := stream()
	if c.err != nil {
		t.Fatalf("first stream: %v", c.err)
	}
	wantMeta(t, "allowed stream", c, map[string]string{sluicegrpc.MetadataLimit: "1", sluicegrpc.MetadataRemaining: "0", sluicegrpc.MetadataReset: "10"})
	clk.Advance(2500 * time.Millisecond)
	c = stream()
	if c.code() != codes.ResourceExhausted || c.reason(t) != sluicehttp.CodeRateLimited {
		t.Fatalf("second stream: %v, want ResourceExhausted", c.err)
	}
	if d := c.retryDelay(); d != 7500*time.Millisecond {
		t.Errorf("RetryInfo delay %v, want 7.5s", d)
	}
	wantMeta(t, "denied stream", c, map[string]string{sluicegrpc.MetadataRetryAfter: "8", sluicegrpc.MetadataReset: "8"})
	if n := h.watches.Load(); n != 1 {
		t.Errorf("the stream handler ran %d times, want 1", n)
	}
}

// Rules per method, a prefix pattern, Unlimited, and a key function of the
// call's metadata that never lets a failure through.
func TestRulesAndKey(t *testing.T) {
	limiter, _ := ratelimit.New(ratelimit.Memory(1000))
	var keyErrors atomic.Int64
	cfg := sluicegrpc.Config{
		Limiter: limiter,
		Default: ratelimit.Rule{Window: time.Minute, Max: 0}, // nothing else is served
		Methods: map[string]ratelimit.Rule{
			checkMethod:               ratelimit.Unlimited,
			"/grpc.health.v1.Health*": {Window: time.Minute, Max: 1},
		},
		Key: func(ctx context.Context, _ string) (string, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			if t := md.Get("tenant"); len(t) > 0 {
				return "tenant:" + t[0], nil
			}
			return "", errors.New("no tenant")
		},
		OnError: func(context.Context, string, error) { keyErrors.Add(1) },
	}
	unary, err := sluicegrpc.UnaryRateLimit(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := sluicegrpc.StreamRateLimit(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &health{}
	client := serve(t, h, grpc.UnaryInterceptor(unary), grpc.StreamInterceptor(stream))

	for range 3 { // Unlimited: no key asked, no metadata
		if c := check(t, client); c.err != nil || c.meta(sluicegrpc.MetadataLimit) != "" {
			t.Errorf("unlimited Check: %v, limit metadata %q", c.err, c.meta(sluicegrpc.MetadataLimit))
		}
	}
	if c := watch(t, client); c.code() != codes.Internal || c.reason(t) != sluicehttp.CodeKeyFailed {
		t.Errorf("Watch without a tenant: %v, want Internal %s", c.err, sluicehttp.CodeKeyFailed)
	}
	if keyErrors.Load() != 1 {
		t.Errorf("OnError told %d times, want 1", keyErrors.Load())
	}
	for _, step := range []struct {
		tenant string
		want   codes.Code
	}{{"a", codes.OK}, {"a", codes.ResourceExhausted}, {"b", codes.OK}} {
		if c := watch(t, client, "tenant", step.tenant); c.code() != step.want {
			t.Errorf("Watch for tenant %s: %v, want %v", step.tenant, c.err, step.want)
		}
	}
	if n := h.watches.Load(); n != 2 {
		t.Errorf("the stream handler ran %d times, want 2", n)
	}
}

// Behind a trusted proxy, x-forwarded-for names the client.
func TestTrustedProxy(t *testing.T) {
	limiter, _ := ratelimit.New(ratelimit.Memory(1000))
	unary, err := sluicegrpc.UnaryRateLimit(sluicegrpc.Config{
		Limiter:        limiter,
		Default:        ratelimit.Rule{Window: time.Minute, Max: 1},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	if err != nil {
		t.Fatal(err)
	}
	client := serve(t, &health{}, grpc.UnaryInterceptor(unary))
	for _, step := range []struct {
		xff  string
		want codes.Code
	}{{"203.0.113.1", codes.OK}, {"203.0.113.1", codes.ResourceExhausted}, {"203.0.113.2", codes.OK}, {"198.51.100.9, 203.0.113.1", codes.ResourceExhausted}} {
		if c := check(t, client, "x-forwarded-for", step.xff); c.code() != step.want {
			t.Errorf("x-forwarded-for %s: %v, want %v", step.xff, c.err, step.want)
		}
	}
}

func TestStorageFailure(t *testing.T) {
	for _, open := range []bool{false, true} {
		var opts []ratelimit.Option
		want := codes.Unavailable
		if open {
			opts, want = append(opts, ratelimit.WithFailOpen()), codes.OK
		}
		limiter, _ := ratelimit.New(ratelimit.Secondary(failing{}), opts...)
		var reported atomic.Int64
		h := &health{}
		unary, stream := rateLimited(t, h, sluicegrpc.Config{Limiter: limiter, Default: ratelimit.Rule{Window: time.Minute, Max: 5},
			OnError: func(_ context.Context, _ string, err error) {
				if errors.Is(err, errDown) {
					reported.Add(1)
				}
			}})
		for name, do := range map[string]func() call{"unary": unary, "stream": stream} {
			c := do()
			if c.code() != want {
				t.Errorf("fail open %v, %s: %v, want %v", open, name, c.err, want)
			}
			if !open && c.reason(t) != sluicehttp.CodeUnavailable {
				t.Errorf("fail closed, %s: reason %q, want %s", name, c.reason(t), sluicehttp.CodeUnavailable)
			}
		}
		if reported.Load() != 2 {
			t.Errorf("fail open %v: OnError told %d times, want 2", open, reported.Load())
		}
		if ran := h.checks.Load() + h.watches.Load(); (ran == 2) != open {
			t.Errorf("fail open %v: the handlers ran %d times", open, ran)
		}
	}
}

func TestAPIKey(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	db, _ := core.New(memory.New())
	keys, err := apikey.New(db, apikey.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	plaintext, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42",
		RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Minute, Max: 3}})
	if err != nil {
		t.Fatal(err)
	}
	unary, err := sluicegrpc.UnaryAPIKey(keys)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := sluicegrpc.StreamAPIKey(keys)
	if err != nil {
		t.Fatal(err)
	}
	h := &health{}
	client := serve(t, h, grpc.UnaryInterceptor(unary), grpc.StreamInterceptor(stream))

	if c := check(t, client); c.code() != codes.Unauthenticated || c.reason(t) != string(sluicegrpc.CodeMissing) {
		t.Errorf("no key: %v, want Unauthenticated %s", c.err, sluicegrpc.CodeMissing)
	}
	if c := watch(t, client, "x-api-key", plaintext+"x"); c.code() != codes.Unauthenticated || c.reason(t) != string(apikey.CodeInvalid) {
		t.Errorf("invalid key: %v, want Unauthenticated %s", c.err, apikey.CodeInvalid)
	}
	if c := check(t, client, "x-api-key", plaintext); c.err != nil || c.owner() != "user-42" {
		t.Errorf("valid key, unary: %v, owner %q, want user-42", c.err, c.owner())
	}
	if c := watch(t, client, "x-api-key", plaintext); c.err != nil || c.owner() != "user-42" {
		t.Errorf("valid key, stream: %v, owner %q, want user-42", c.err, c.owner())
	}
	if c := check(t, client, "x-api-key", plaintext); c.err != nil {
		t.Errorf("valid key, third call: %v", c.err)
	}
	clk.Advance(20 * time.Second)
	c := check(t, client, "x-api-key", plaintext)
	if c.code() != codes.ResourceExhausted || c.reason(t) != string(apikey.CodeRateLimited) {
		t.Fatalf("over the key's rate limit: %v, want ResourceExhausted %s", c.err, apikey.CodeRateLimited)
	}
	if d := c.retryDelay(); d != 40*time.Second {
		t.Errorf("RetryInfo delay %v, want 40s", d)
	}
	wantMeta(t, "key rate limited", c, map[string]string{sluicegrpc.MetadataRetryAfter: "40"})
	if n := h.checks.Load() + h.watches.Load(); n != 3 {
		t.Errorf("the handlers ran %d times, want 3", n)
	}
}

// TestAPIKeyVerifyOptions: the manager's own options reach every call; a
// key without the permission fails with PermissionDenied and spends
// nothing, one with it spends the cost.
func TestAPIKeyVerifyOptions(t *testing.T) {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, err := apikey.New(db)
	if err != nil {
		t.Fatal(err)
	}
	quota := int64(5)
	writer, w, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "u", Remaining: &quota, RateLimit: &apikey.RateLimit{},
		Permissions: map[string][]string{"files": {"write"}}})
	reader, r, _ := keys.Create(ctx, apikey.CreateParams{ReferenceID: "u", Remaining: &quota, RateLimit: &apikey.RateLimit{},
		Permissions: map[string][]string{"files": {"read"}}})
	unary, err := sluicegrpc.UnaryAPIKey(keys, sluicegrpc.Verify(apikey.Permissions(map[string][]string{"files": {"write"}})),
		sluicegrpc.Verify(apikey.Cost(2)))
	if err != nil {
		t.Fatal(err)
	}
	client := serve(t, &health{}, grpc.UnaryInterceptor(unary))
	if c := check(t, client, "x-api-key", writer); c.err != nil {
		t.Errorf("key with the permission: %v", c.err)
	}
	if c := check(t, client, "x-api-key", reader); c.code() != codes.PermissionDenied || c.reason(t) != string(apikey.CodeForbidden) {
		t.Errorf("key without the permission: %v, want PermissionDenied %s", c.err, apikey.CodeForbidden)
	}
	for _, tc := range []struct {
		id   int64
		want int64
	}{{w.ID, 3}, {r.ID, 5}} {
		if k, err := keys.Get(ctx, tc.id); err != nil || *k.Remaining != tc.want {
			t.Errorf("key %d: remaining %v, %v; want %d", tc.id, k.Remaining, err, tc.want)
		}
	}
}

func TestConstructorErrors(t *testing.T) {
	limiter, _ := ratelimit.New(ratelimit.Memory(10))
	minute := ratelimit.Rule{Window: time.Minute, Max: 1}
	for name, cfg := range map[string]sluicegrpc.Config{
		"no limiter":         {Default: minute},
		"no default":         {Limiter: limiter},
		"bad rule":           {Limiter: limiter, Default: minute, Methods: map[string]ratelimit.Rule{checkMethod: {Window: -1, Max: 1}}},
		"bad method":         {Limiter: limiter, Default: minute, Methods: map[string]ratelimit.Rule{"Check": minute}},
		"inner star":         {Limiter: limiter, Default: minute, Methods: map[string]ratelimit.Rule{"/a*/b": minute}},
		"bad prefix bits":    {Limiter: limiter, Default: minute, IPv6Prefix: 200},
		"header, no proxies": {Limiter: limiter, Default: minute, ClientIPHeader: "x-real-ip"},
	} {
		if _, err := sluicegrpc.UnaryRateLimit(cfg); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("UnaryRateLimit, %s: %v, want core.ErrInvalid", name, err)
		}
		if _, err := sluicegrpc.StreamRateLimit(cfg); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("StreamRateLimit, %s: %v, want core.ErrInvalid", name, err)
		}
	}
	if _, err := sluicegrpc.UnaryAPIKey(nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("UnaryAPIKey(nil): %v, want core.ErrInvalid", err)
	}
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)
	for name, opt := range map[string]sluicegrpc.APIKeyOption{
		"nil":                nil,
		"negative cost":      sluicegrpc.Verify(apikey.Cost(-1)),
		"no action":          sluicegrpc.Verify(apikey.Permissions(map[string][]string{"files": nil})),
		"reserved metadata":  sluicegrpc.MetadataKey("grpc-key"),
		"binary metadata":    sluicegrpc.MetadataKey("key-bin"),
		"nil error reporter": sluicegrpc.OnAPIKeyError(nil),
	} {
		if _, err := sluicegrpc.StreamAPIKey(keys, opt); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("StreamAPIKey, %s: %v, want core.ErrInvalid", name, err)
		}
	}
}
