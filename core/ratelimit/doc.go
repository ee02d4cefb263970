// Package ratelimit is sluice's rate limiter: fixed windows (or Better
// Auth's idle windows) counted in the database through core.DB, in a
// core.SecondaryStorage such as Redis, or in process memory, plus a net/http
// middleware that limits by client IP and path.
//
// # Decisions
//
// [Limiter.Consume] spends one unit of a key's budget under a [Rule]
// (at most Max units per Window) and answers with a [Decision]. A denial is
// a normal outcome: Allowed is false and the error is nil. Errors are for
// bad input (wrapping core.ErrInvalid, always denied) and for storage
// failures, where the decision's Allowed is the limiter's failure policy:
// closed (denied) by default, open with [WithFailOpen]. Fail-open admits
// only a failure of the storage, never one the request causes: bad input,
// a table unfit for exact decisions (core.ErrSchema) and the request's own
// context ending are denied whatever the policy.
//
// A key must be valid UTF-8 without NUL bytes, which every storage can
// hold; anything else is bad input, refused before any I/O. [SafeKey]
// makes any string, such as one built from a request, into a storable key
// of bounded length without letting two strings share a key.
//
// Every storage reports the same Reset and RetryAfter for the same state,
// checks (cost 0) included: the end of the current window.
//
// # Windows
//
// A window opens with the first request of a key and lasts Window. A request
// whose elapsed time since the window's start is exactly Window belongs to a
// new window: the boundary instant opens the next window, it does not close
// the old one. With [FixedWindow] (the default) requests inside a window do
// not move its start, so a key gets Max units per window however it spreads
// them. With [BetterAuthWindow] every allowed request moves the start to its
// own time, as Better Auth does: the window measures idle time, and a key
// that keeps sending requests stays in one window until it reaches Max.
//
// # Database storage
//
// Counters live in the rateLimit model (key, count, lastRequest in epoch
// milliseconds). A request first tries the in-window increment, count +=
// cost guarded on the key, lastRequest > now − window and count ≤ max −
// cost, so an allowed request in steady state costs one round trip. Only on
// a miss does it read the row, then: an over window is reset with count =
// cost, lastRequest = now, guarded on lastRequest ≤ the value read, so one
// concurrent caller wins; a missing row is created, and a unique conflict
// means a concurrent opener won, so it reads and decides again; a full
// window is denied. Lost races retry, at most [DefaultMaxAttempts] times by
// default and never past the context's end; then the result is an error
// wrapping core.ErrContention.
//
// Before its first decision the storage checks that the table has what
// exactness depends on, such as the unique index on the key (see
// core.DB.CheckSchema), until the check succeeds once; a table that fails
// it gets no decision. Call [Limiter.CheckSchema] at start-up to fail early.
//
// # Denial cache
//
// When a key is at its max, no request can be admitted before its window
// ends, under either window semantics: a full key admits nothing, so nothing
// moves its start. The limiter remembers such keys until that instant and
// denies them with no storage call. The cache is bounded in size and keyed
// by key and rule; a key must always be used with the same rule.
//
// # Other storages
//
// [Secondary] counts in a key-value store with an atomic, TTL-bound
// increment (fixed windows only); with core.BoundedIncrementer a denied
// request leaves the counter untouched. [Memory] counts in this process, in
// a bounded number of keys spread over shards with a lock each.
//
// # Pruning
//
// [Limiter.Prune] deletes database rows whose window is over under the
// longest window the limiter declares ([WithLongestWindow]); a rule with a
// longer window is refused, so pruning can never delete a live row.
// [Limiter.StartPruning] runs it on a timer until the context ends or
// [Limiter.Close].
//
// # HTTP
//
// [Middleware] limits each client IP (see [ClientKey]: trusted proxies,
// IPv6 /64 groups, a shared bucket for requests with no usable address) per
// path, with rules by exact path, '*' pattern or function, and answers
// denials with 429, a JSON body, Retry-After and RateLimit-* headers. Its
// keys go through [SafeKey], so no path can make a key the database refuses.
package ratelimit
