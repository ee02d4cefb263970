package sluicehttp_test

// The holes of issue 16 that lay in the HTTP middleware: keys a database
// refuses, hung-up clients, IPv4-mapped proxy prefixes, long paths.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// strictText is an adapter that refuses text a PostgreSQL or MariaDB
// server refuses (invalid UTF-8, NUL) with an error of its own words, as
// the driver does: not core.ErrInvalid, so the limiter sees an outage.
type strictText struct {
	*memory.Memory
	refused atomic.Int64
}

var errEncoding = errors.New(`pq: invalid byte sequence for encoding "UTF8"`)

func (s *strictText) refuse(where []driver.Where, set ...[]driver.Assignment) error {
	bad := func(v any) bool {
		str, ok := v.(string)
		return ok && (!utf8.ValidString(str) || strings.IndexByte(str, 0) >= 0)
	}
	for _, w := range where {
		if bad(w.Value) {
			s.refused.Add(1)
			return errEncoding
		}
	}
	for _, as := range set {
		for _, a := range as {
			if bad(a.Value) {
				s.refused.Add(1)
				return errEncoding
			}
		}
	}
	return nil
}

func (s *strictText) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	if err := s.refuse(where, set); err != nil {
		return nil, err
	}
	return s.Memory.IncrementOne(ctx, t, where, inc, set)
}

func (s *strictText) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	if err := s.refuse(where); err != nil {
		return nil, err
	}
	return s.Memory.FindOne(ctx, t, where)
}

func (s *strictText) Create(ctx context.Context, t *driver.Table, values []driver.Assignment) (driver.Record, error) {
	if err := s.refuse(nil, values); err != nil {
		return nil, err
	}
	return s.Memory.Create(ctx, t, values)
}

// TestMiddlewareKeysAreStorable: a path whose decoded form is not valid
// UTF-8 or holds NUL once made the database refuse the write, and fail-open
// then admitted every such request.
func TestMiddlewareKeysAreStorable(t *testing.T) {
	adapter := &strictText{Memory: memory.New()}
	db, err := core.New(adapter)
	if err != nil {
		t.Fatal(err)
	}
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithFailOpen())
	var errs []error
	f := newHTTP(t, sluicehttp.RateLimitConfig{Limiter: l, Default: rule3,
		OnError: func(_ *http.Request, err error) { errs = append(errs, err) }})
	for _, p := range []string{"/%00", "/%FF", "/%C3%28", "/a%0Ab", "/%25FF"} {
		before := f.served
		for i := 0; i < 10; i++ {
			f.do(p, "203.0.113.7:1")
		}
		if got := f.served - before; got != 3 {
			t.Errorf("%s: %d of 10 requests admitted on a limit of 3", p, got)
		}
	}
	if len(errs) != 0 || adapter.refused.Load() != 0 {
		t.Errorf("%d limiter errors (first: %v), %d writes refused by the database; want none", len(errs), first(errs), adapter.refused.Load())
	}
	// Each of those paths has a bucket of its own: "/%FF" (byte 0xFF) and
	// "/%25FF" (the text %FF) are not one key.
	if n, _ := db.Count(context.Background(), core.ModelRateLimit); n != 5 {
		t.Errorf("%d counters for 5 distinct paths", n)
	}
	// A path keeps one key however the client encodes it: "/l%6Fgin" is
	// "/login", so re-encoding is no way round the limit.
	for i, p := range []string{"/login", "/l%6Fgin", "/%6C%6F%67%69%6E", "/login"} {
		w := f.do(p, "198.51.100.9:1")
		want := 200
		if i == 3 {
			want = 429
		}
		if w.Code != want {
			t.Errorf("request %d to %s: status %d, want %d", i, p, w.Code, want)
		}
	}
}

func first(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

// TestCancelledRequestsNeverReachTheHandler: a client that sends a request
// and hangs up is not an outage, so fail-open does not admit it.
func TestCancelledRequestsNeverReachTheHandler(t *testing.T) {
	f := newHTTP(t, sluicehttp.RateLimitConfig{Default: rule3}, ratelimit.WithFailOpen())
	statuses := map[int]int{}
	for i := 0; i < 50; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := httptest.NewRequest("GET", "/login", nil).WithContext(ctx)
		r.RemoteAddr = "203.0.113.7:1"
		w := httptest.NewRecorder()
		f.handler.ServeHTTP(w, r)
		statuses[w.Code]++
	}
	if f.served != 0 || statuses[499] != 50 {
		t.Errorf("handler ran for %d of 50 cancelled requests on a limit of 3, statuses %v; want 0 and 50 × 499", f.served, statuses)
	}
	// A request whose deadline passed is answered 503, its handler not run.
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	r := httptest.NewRequest("GET", "/login", nil).WithContext(ctx)
	r.RemoteAddr = "203.0.113.7:1"
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable || f.served != 0 {
		t.Errorf("expired request: status %d, handler ran %d times; want 503 and 0", w.Code, f.served)
	}
	// The cancelled requests spent nothing: the client is admitted afresh.
	for i := 0; i < 3; i++ {
		if w := f.do("/login", "203.0.113.7:1"); w.Code != 200 {
			t.Fatalf("live request %d: status %d", i, w.Code)
		}
	}
}

// TestMappedTrustedProxyPrefix: a trusted prefix written as IPv4-mapped
// IPv6 once matched nothing, so every client behind the proxy shared its
// bucket.
func TestMappedTrustedProxyPrefix(t *testing.T) {
	mapped := []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.1.2.3:80"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	if got := sluicehttp.ClientKey(r, mapped); got != "198.51.100.1" {
		t.Errorf("ClientKey through ::ffff:10.0.0.0/104 = %q, want the client 198.51.100.1", got)
	}
	f := newHTTP(t, sluicehttp.RateLimitConfig{Default: ratelimit.Rule{Window: time.Minute, Max: 1}, TrustedProxies: mapped})
	denied := 0
	for i := 0; i < 10; i++ {
		r := httptest.NewRequest("GET", "/login", nil)
		r.RemoteAddr = "10.1.2.3:80"
		r.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
		w := httptest.NewRecorder()
		f.handler.ServeHTTP(w, r)
		if w.Code != 200 {
			denied++
		}
	}
	if denied != 0 {
		t.Errorf("%d of 10 distinct clients behind the proxy denied on a limit of 1 each", denied)
	}
	// A prefix that can never match as written is refused.
	for _, p := range []netip.Prefix{{}, netip.MustParsePrefix("::ffff:0.0.0.0/80")} {
		_, err := sluicehttp.RateLimit(sluicehttp.RateLimitConfig{Limiter: f.limiter, Default: rule3, TrustedProxies: []netip.Prefix{p}})
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "TrustedProxies[0]") {
			t.Errorf("prefix %v: err = %v, want ErrInvalid naming TrustedProxies[0]", p, err)
		}
	}
}

// TestLongPathsAreLimited: through the middleware and a database, a long
// path is limited like any other, its key shortened to fit the column.
func TestLongPathsAreLimited(t *testing.T) {
	// Through the middleware and a database, a long path is limited like any other.
	db, _ := core.New(memory.New())
	l := newLimiter(t, ratelimit.Database(db))
	f := newHTTP(t, sluicehttp.RateLimitConfig{Limiter: l, Default: ratelimit.Rule{Window: time.Minute, Max: 1}})
	path := "/" + strings.Repeat("x", 1000)
	if w := f.do(path, "203.0.113.7:1"); w.Code != 200 {
		t.Fatalf("first request to a long path: %d %s", w.Code, w.Body)
	}
	if w := f.do(path, "203.0.113.7:1"); w.Code != 429 {
		t.Fatalf("second request to a long path: %d", w.Code)
	}
}

func TestZeroLimiterIsAnError(t *testing.T) {
	var zero ratelimit.Limiter
	_, err := sluicehttp.RateLimit(sluicehttp.RateLimitConfig{Limiter: &zero, Default: rule3})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "RateLimitConfig.Limiter") || !strings.Contains(err.Error(), "not initialised") {
		t.Errorf("zero Limiter: err = %v, want ErrInvalid naming RateLimitConfig.Limiter, not initialised", err)
	}
}
