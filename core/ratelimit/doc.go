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
// # Write combining
//
// With [WithWriteCombining], concurrent decisions of one limiter on one
// key and rule share guarded writes. A request that finds no write for its
// key in flight goes alone, on the path above, so a key that is not hot
// waits for nothing. Requests that arrive while a write is in flight
// queue, and when it ends they all go in the next write, run by the first
// of them: count += k, the sum of their costs, guarded on the key, the
// live window and count ≤ max − k. When it matches, each is admitted with
// the count it would have had if they had been served one after another
// in arrival order. When it misses, the row is read: requests whose cost
// does not fit what is left are denied at that state, and a further write
// claims as many of the others as fit, and so on; a row without a live
// window is opened by the first of them on the path above, and the rest
// claim in it. A request is thus admitted only by a guarded write that
// leaves the count at most max, and denied only at a state of the row in
// which it does not fit: when demand exceeds the limit exactly max units
// are admitted, never more, never fewer, across processes too, each
// combining its own requests. Checks (cost 0) and costs above max are not
// combined. A batch gives up after as many lost races as a request.
//
// It is an option because it changes which decision a request gets,
// though never the totals above:
//   - A batch is decided at the latest clock reading among its requests,
//     all taken before its write: a request that read the clock just
//     before its window ended may be counted in the next one.
//   - Within a batch the order is arrival order, not the database's, and
//     the batch shares one write's fate: a storage error fails all of it.
//   - A request whose context ends while it is queued leaves with the
//     context's error and is not counted. Once its write has started, that
//     write decides it, and it waits for the outcome even past its
//     context's end: it is told the truth, admitted and counted, or not,
//     never counted and told it failed. The write carries the values of
//     the context of the request running it and ends only when every
//     request in it has given up, so no client hanging up fails the
//     others, and a hung write is abandoned once nobody waits for it.
//
// Combining pays where writes to one row wait for each other, as a
// database's do on a hot row: one write then admits a whole batch. Each
// key has at most one write in flight per limiter.
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
