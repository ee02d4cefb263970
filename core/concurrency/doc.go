// Package concurrency limits how many holders a key has at once: at most n
// in flight per key, across every process that shares the store.
//
// Use it where a rate limit does not fit because the cost is the time a
// thing takes, not how often it starts: at most 2 exports per account
// running, at most 10 connections per tenant to a slow upstream, one job
// per resource. A rate limit (package ratelimit) counts starts in a
// window; a concurrency limit counts what is running now.
//
//	limiter, err := concurrency.New(concurrency.Database(db))
//	slot, ok, err := limiter.Acquire(ctx, "export:"+accountID, 2, time.Minute)
//	if err != nil { … }  // a failure of the store
//	if !ok { … }         // all 2 held: slot.RetryAfter says when a lease ends
//	defer slot.Release(context.WithoutCancel(ctx))
//
// Each acquisition is a lease: a holder that dies without releasing frees
// its slot when the lease ends, and a holder that needs longer calls
// [Slot.Renew] before then. Every acquisition of a slot gets a new
// generation, and Release and Renew are guarded on it, so a holder whose
// lease ended, and whose slot another has taken since, frees or extends
// nothing of theirs.
//
// Acquisition is exact under races: however many callers on however many
// servers acquire one key at the same instant, exactly n get a slot (each
// store's acquisition is one atomic step: a guarded write on the database,
// a lock in memory, a Lua script on Redis). Denial is ok == false with a nil
// error; errors are failures only. Stores: [Database] (any core.DB, no
// table of its own: slots are rows of the rateLimit model), [Memory] (one
// process) and sluiceredis.Storage (one hash per key, Redis Cluster safe).
package concurrency
