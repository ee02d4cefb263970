package operator

import (
	"context"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// HistoryPerKey is how many recent changes a [Recorder] keeps of each key.
const HistoryPerKey = 50

// MaxRecordedKeys bounds how many keys a [Recorder] keeps a history and
// counters of; past it, the key least recently changed or verified is
// forgotten.
const MaxRecordedKeys = 10000

// Recorder keeps, in memory, what the console shows beside the stored
// keys: each key's recent changes with their actors, and counters of
// decisions (verifications by key, rate-limit decisions by rule) that the
// live view samples. Give its ObserveKeys to [apikey.WithObserver] and its
// ObserveLimits to [ratelimit.WithObserver], and the Recorder to
// [Config]. It keeps ids, kinds, actors, times and counts: never a key's
// secret or hash, nor a rate-limit key. Safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	keys    map[int64]*keyRecord
	rules   map[ratelimit.Rule]*counts
	all     counts // every verification
	clock   func() time.Time
	touched int64 // a logical clock: which key was used least recently
}

type counts struct{ allowed, denied int64 }

type keyRecord struct {
	history []keyEvent // oldest first, at most HistoryPerKey
	counts  counts
	used    int64
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{keys: map[int64]*keyRecord{}, rules: map[ratelimit.Rule]*counts{}, clock: time.Now}
}

// ObserveKeys records one event of an [apikey.Manager]: a verification
// is counted under its key (a failure as denied); a change joins its
// key's history with the actor of ctx ([ActorFrom]).
func (rec *Recorder) ObserveKeys(ctx context.Context, e apikey.Event) {
	if e.Kind == apikey.ExpiredDeleted || e.Kind == apikey.OwnerLimitsSet {
		return // of no one key
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if e.Kind == apikey.Verified {
		c := &rec.all
		c.add(e.Err == nil && e.Result.Valid)
		if e.KeyID != 0 {
			rec.record(e.KeyID).counts.add(e.Err == nil && e.Result.Valid)
		}
		return
	}
	actor, _ := ActorFrom(ctx)
	at := e.Start
	if at.IsZero() {
		at = rec.clock()
	}
	r := rec.record(e.KeyID)
	r.history = append(r.history, keyEvent{Kind: e.Kind.String(), Actor: actor, At: at.UTC()})
	if len(r.history) > HistoryPerKey {
		r.history = append(r.history[:0], r.history[len(r.history)-HistoryPerKey:]...)
	}
}

// ObserveLimits counts one decision of a [ratelimit.Limiter] under its
// rule (an error as denied). Checks, which decide nothing, are not counted.
func (rec *Recorder) ObserveLimits(_ context.Context, e ratelimit.Event) {
	if e.Cost == 0 {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	c := rec.rules[e.Rule]
	if c == nil {
		c = &counts{}
		rec.rules[e.Rule] = c
	}
	c.add(e.Err == nil && e.Decision.Allowed)
}

func (c *counts) add(allowed bool) {
	if allowed {
		c.allowed++
	} else {
		c.denied++
	}
}

// record returns id's record, made when missing; mu is held.
func (rec *Recorder) record(id int64) *keyRecord {
	rec.touched++
	r := rec.keys[id]
	if r == nil {
		if len(rec.keys) >= MaxRecordedKeys {
			rec.forgetOldest()
		}
		r = &keyRecord{}
		rec.keys[id] = r
	}
	r.used = rec.touched
	return r
}

func (rec *Recorder) forgetOldest() {
	var oldest int64
	at := int64(-1)
	for id, r := range rec.keys {
		if at < 0 || r.used < at {
			oldest, at = id, r.used
		}
	}
	delete(rec.keys, oldest)
}

// history returns id's changes, newest first.
func (rec *Recorder) history(id int64) []keyEvent {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r := rec.keys[id]
	out := make([]keyEvent, 0, 8)
	if r == nil {
		return out
	}
	for i := len(r.history) - 1; i >= 0; i-- {
		out = append(out, r.history[i])
	}
	return out
}

// counted returns the counters the live view samples: those of key id
// when id is not 0, of rule when ok, else of every verification.
func (rec *Recorder) counted(id int64, rule ratelimit.Rule, byRule bool) counts {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	switch {
	case byRule:
		if c := rec.rules[rule]; c != nil {
			return *c
		}
		return counts{}
	case id != 0:
		if r := rec.keys[id]; r != nil {
			return r.counts
		}
		return counts{}
	}
	return rec.all
}
