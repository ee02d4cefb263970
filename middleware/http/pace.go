package sluicehttp

import (
	"net/http"
	"sync"
	"time"
)

// maxPartitions bounds the partitions a [Transport] remembers; past it,
// the partitions already open again are forgotten, and while every one
// remembered is still closed a new partition is not paced.
const maxPartitions = 4096

// pacer remembers, per partition, when a [Transport] may send again.
type pacer struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// wait is how long partition part waits at now: 0 when it is open.
func (p *pacer) wait(part string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.until[part].Sub(now)
}

// record closes partition part until the wait a response says: the
// denial's (e), or the longest t of its exhausted policies. A partition is
// never reopened earlier than it was closed.
func (p *pacer) record(part string, h http.Header, e *RateLimitedError, now time.Time) {
	var wait time.Duration
	var ok bool
	if e != nil {
		wait, ok = e.Wait, e.WaitKnown
	} else {
		limits, _ := ParseRateLimit(h)
		wait, ok = exhausted(limits)
	}
	if !ok || wait <= 0 {
		return
	}
	at := now.Add(wait)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until == nil {
		p.until = map[string]time.Time{}
	}
	if len(p.until) >= maxPartitions {
		for k, u := range p.until {
			if !u.After(now) {
				delete(p.until, k)
			}
		}
	}
	if at.After(p.until[part]) && (len(p.until) < maxPartitions || !p.until[part].IsZero()) {
		p.until[part] = at
	}
}
