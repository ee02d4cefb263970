package sluiceredis

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// pipe sends the scripts of concurrent decisions to Redis together. A call
// that finds a round trip free and nobody waiting sends its command alone,
// as it would without the pipe; while every round trip is taken, calls
// queue, and the first of them, once a round trip ends, sends the whole
// queue as one pipeline: one write and one read for the batch on the
// client and on the server, where each call alone costs a write and a read
// on both. Each command is still its own script call, atomic on its own
// and answered on its own; only the system calls are shared. A lone caller
// pays nothing; at 32 concurrent callers on one client the batches take
// most of the per-command system calls out of both sides.
type pipe struct {
	slots chan struct{} // one token per round trip in flight
	mu    sync.Mutex
	queue []*pending // waiting for a round trip; the first one sends them
}

// pending is a queued command and the signal that its reply is in.
type pending struct {
	cmd  redis.Cmder
	done chan struct{}
}

var pendings = sync.Pool{New: func() any { return &pending{done: make(chan struct{}, 1)} }}

func newPipe(inFlight int) *pipe { return &pipe{slots: make(chan struct{}, inFlight)} }

// process runs cmd on client, alone or in a batch, and returns its error.
func (p *pipe) process(ctx context.Context, client redis.UniversalClient, cmd redis.Cmder) error {
	if p == nil {
		return client.Process(ctx, cmd)
	}
	p.mu.Lock()
	if len(p.queue) == 0 {
		select {
		case p.slots <- struct{}{}:
			p.mu.Unlock()
			err := client.Process(ctx, cmd)
			<-p.slots
			return err
		default:
		}
	}
	w := pendings.Get().(*pending)
	w.cmd = cmd
	p.queue = append(p.queue, w)
	first := len(p.queue) == 1
	p.mu.Unlock()
	if !first {
		select {
		case <-w.done:
			w.cmd = nil
			pendings.Put(w)
			return cmd.Err()
		case <-ctx.Done():
			// The command stays in its batch, which still sends it and
			// signals w (buffered; w is not reused). Its outcome is
			// unknown to this caller, as when a deadline passes during a
			// round trip; the caller must not read cmd.
			return ctx.Err()
		}
	}
	// Wait for a round trip to end; the queue grows meanwhile. The wait is
	// bounded by the commands in flight, which have their own timeouts.
	p.slots <- struct{}{}
	p.mu.Lock()
	batch := p.queue
	p.queue = make([]*pending, 0, cap(batch))
	p.mu.Unlock()
	// The batch runs under this caller's context without its cancellation:
	// the others' commands must not fail for this caller's deadline.
	_, _ = client.Pipelined(context.WithoutCancel(ctx), func(pl redis.Pipeliner) error {
		for _, q := range batch {
			_ = pl.Process(ctx, q.cmd)
		}
		return nil
	})
	<-p.slots
	for _, q := range batch[1:] {
		q.done <- struct{}{}
	}
	w.cmd = nil
	pendings.Put(w)
	return cmd.Err()
}
