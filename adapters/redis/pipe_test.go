package sluiceredis

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// holdHook holds the first command sent alone until release is closed,
// and counts the pipelines of scripts and the scripts they carry.
type holdHook struct {
	held     atomic.Bool
	release  chan struct{}
	pipes    atomic.Int64
	piped    atomic.Int64
	received chan struct{}
}

func (h *holdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.held.CompareAndSwap(false, true) {
			close(h.received)
			<-h.release
		}
		return next(ctx, cmd)
	}
}

func (h *holdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var scripts int64
		for _, c := range cmds {
			if c.Name() == "evalsha" {
				scripts++
			}
		}
		if scripts > 0 { // not a new connection's handshake
			h.pipes.Add(1)
			h.piped.Add(scripts)
		}
		return next(ctx, cmds)
	}
}

// queued reports how many calls wait in the pipe.
func (p *pipe) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// TestPipeBatchesAndKeepsEachAnswer: with one round trip in flight (held
// by a hook), the calls that follow queue and go as one pipeline, and each
// caller gets its own script's answer. A pipe that answered a caller with
// another's reply, or lost a command, fails here.
func TestPipeBatchesAndKeepsEachAnswer(t *testing.T) {
	addr := os.Getenv("SLUICE_REDIS_ADDR")
	if addr == "" {
		t.Skip("SLUICE_REDIS_ADDR not set")
	}
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 8})
	defer client.Close()
	prefix := fmt.Sprintf("sluicepipe:%d:", time.Now().UnixNano())
	s, err := New(client, WithPrefix(prefix), WithInFlight(1))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		keys, _ := client.Keys(ctx, prefix+"*").Result()
		for _, k := range keys {
			client.Del(ctx, k)
		}
	}()
	// The scripts are loaded first: a NOSCRIPT in the batch is its own test.
	if err := client.ScriptLoad(ctx, boundedScript.src).Err(); err != nil {
		t.Fatal(err)
	}
	h := &holdHook{release: make(chan struct{}), received: make(chan struct{})}
	client.AddHook(h)
	const n = 40
	got := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	call := func(i int) {
		defer wg.Done()
		c, ok, err := s.IncrementBounded(ctx, fmt.Sprint("k", i), int64(i+1), 1000, time.Minute)
		if err == nil && !ok {
			err = fmt.Errorf("call %d refused", i)
		}
		got[i], errs[i] = c.Value, err
	}
	wg.Add(1)
	go call(0)
	<-h.received // call 0 holds the only round trip
	wg.Add(n - 1)
	for i := 1; i < n; i++ {
		go call(i)
	}
	for s.pipe.queued() < n-1 {
		runtime.Gosched()
	}
	close(h.release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != int64(i+1) {
			t.Errorf("call %d: %d, %v; want %d", i, got[i], errs[i], i+1)
		}
	}
	if p, c := h.pipes.Load(), h.piped.Load(); p != 1 || c != n-1 {
		t.Errorf("%d pipelines carried %d commands; want 1 carrying %d", p, c, n-1)
	}
}

// TestPipeReloadsScriptsInABatch: after SCRIPT FLUSH, a batch's commands
// answered NOSCRIPT are each sent again as EVAL and answered.
func TestPipeReloadsScriptsInABatch(t *testing.T) {
	addr := os.Getenv("SLUICE_REDIS_ADDR")
	if addr == "" {
		t.Skip("SLUICE_REDIS_ADDR not set")
	}
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 8})
	defer client.Close()
	prefix := fmt.Sprintf("sluicepipe:%d:", time.Now().UnixNano())
	s, err := New(client, WithPrefix(prefix), WithInFlight(1))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		keys, _ := client.Keys(ctx, prefix+"*").Result()
		for _, k := range keys {
			client.Del(ctx, k)
		}
	}()
	for round := range 3 {
		if err := client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tat, ok, err := s.AdvanceTAT(ctx, fmt.Sprint("g", i), 1000, 60000, 1e6)
				if err != nil || !ok || tat != 1000+60000*int64(round+1) {
					t.Errorf("round %d key %d: %d, %v, %v", round, i, tat, ok, err)
				}
			}()
		}
		wg.Wait()
	}
}

// TestWithInFlightRefusesNegative: a negative count is a configuration
// error, named.
func TestWithInFlightRefusesNegative(t *testing.T) {
	if _, err := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), WithInFlight(-1)); err == nil {
		t.Fatal("New(WithInFlight(-1)) = nil error")
	}
	s, err := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), WithInFlight(0))
	if err != nil || s.pipe != nil {
		t.Fatalf("New(WithInFlight(0)) = %v, %v; want no pipe", s.pipe, err)
	}
}
