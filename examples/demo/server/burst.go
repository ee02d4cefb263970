package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
)

// BurstConfig describes a burst: N requests sent at once.
type BurstConfig struct {
	URL string // the route, such as http://127.0.0.1:8080/hello
	N   int    // how many requests; at least 1
	// Key, when set, is sent in the x-api-key header.
	Key string
	// Client sends the requests; nil means a client with a connection per
	// request and a 30 s timeout.
	Client *http.Client
}

// BurstResult counts the answers to a burst.
type BurstResult struct {
	N        int // requests sent
	Admitted int // answered 2xx
	Denied   int // answered 429
	Failed   int // any other answer, or no answer
	// Limit is the window's limit as the RateLimit-Limit header announced
	// it, or -1 when no response carried it.
	Limit int64
	// Statuses counts the answers by status code (0: no answer).
	Statuses map[int]int
	// FirstError is the first transport error or unexpected status, if any.
	FirstError error
}

// String reads as "admitted 5 of 200 (limit 5), 195 denied with 429, 0 failed".
func (r BurstResult) String() string {
	limit := "limit unknown"
	if r.Limit >= 0 {
		limit = fmt.Sprintf("limit %d", r.Limit)
	}
	return fmt.Sprintf("admitted %d of %d (%s), %d denied with 429, %d failed", r.Admitted, r.N, limit, r.Denied, r.Failed)
}

// Burst sends cfg.N requests at once: each is built in its own goroutine,
// which then waits until every one is ready, and they all go together, as
// from many clients at the same instant.
func Burst(ctx context.Context, cfg BurstConfig) (BurstResult, error) {
	if cfg.N < 1 {
		return BurstResult{}, fmt.Errorf("%w: burst: n must be at least 1, got %d", core.ErrInvalid, cfg.N)
	}
	if cfg.URL == "" {
		return BurstResult{}, fmt.Errorf("%w: burst: empty URL", core.ErrInvalid)
	}
	if _, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.URL, nil); err != nil {
		return BurstResult{}, fmt.Errorf("%w: burst: %w", core.ErrInvalid, err)
	}
	client := cfg.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = cfg.N
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	}

	type answer struct {
		status int
		limit  int64
		err    error
	}
	answers := make([]answer, cfg.N)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(cfg.N)
	done.Add(cfg.N)
	for i := range cfg.N {
		go func() {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.URL, nil)
			if cfg.Key != "" {
				req.Header.Set(sluicehttp.DefaultHeader, cfg.Key)
			}
			ready.Done()
			<-start
			resp, err := client.Do(req)
			if err != nil {
				answers[i] = answer{err: err, limit: -1}
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			a := answer{status: resp.StatusCode, limit: -1}
			if v, err := strconv.ParseInt(resp.Header.Get("RateLimit-Limit"), 10, 64); err == nil {
				a.limit = v
			}
			answers[i] = a
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()

	res := BurstResult{N: cfg.N, Limit: -1, Statuses: map[int]int{}}
	for _, a := range answers {
		res.Statuses[a.status]++
		res.Limit = max(res.Limit, a.limit)
		switch {
		case a.err != nil:
			res.Failed++
			res.FirstError = cmp.Or(res.FirstError, a.err)
		case a.status >= 200 && a.status < 300:
			res.Admitted++
		case a.status == http.StatusTooManyRequests:
			res.Denied++
		default:
			res.Failed++
			res.FirstError = cmp.Or(res.FirstError, errors.New("unexpected status "+strconv.Itoa(a.status)))
		}
	}
	return res, ctx.Err()
}
