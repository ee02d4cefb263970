// Package ratelimit is sluice's rate limiter: fixed windows (or Better
// Auth's idle windows, or a GCRA token bucket) counted in the database
// through core.DB, in a driver.SecondaryStorage such as Redis, or in process
// memory. It decides; it serves no protocol: the net/http middleware is
// package sluicehttp (module middleware/http), on which sluice's gin, echo
// and gRPC middleware build.
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
// # Calendar windows
//
// A [Rule] with Calendar set ([Day], [Week], [Month] or [Year]) counts in
// the calendar period holding the request, in the rule's Location (nil:
// UTC), instead of in a window opened by a key's first request: the
// window of a request at t is [the start of t's period, the start of the
// next) there, and [Decision.Reset] is the next period's start. A period
// starts at local midnight (where a transition skips midnight, as in
// America/Sao_Paulo, at the first instant of the day), so a day lasts 23,
// 24 or 25 hours across daylight-saving changes; a week starts on Monday
// (ISO 8601); a month on its first day and a year on 1 January. The
// library computes each period's start and end itself, in epoch
// milliseconds, so every process and every storage agrees on them. Window
// must be 0: the period is the window ([Rule.Validate] refuses anything
// else with core.ErrInvalid). [ParseRule] reads "1000/day" (UTC) and
// "1000/month@Europe/Berlin", loading the zone with time.LoadLocation: an
// unknown zone is an error wrapping core.ErrInvalid.
//
// Only [FixedWindow] counts in periods; under the other modes a calendar
// rule is refused with core.ErrInvalid naming the mode: a Better Auth
// window moves with each admission, GCRA spaces requests Window/Max apart,
// and SlidingWindow weighs the previous window by the share of one length
// the last Window still covers, none of which a period of 23 to 25 hours
// or 28 to 31 days has.
//
// Every storage counts a period as a fixed window whose start is the
// period's: [Database] keeps the key's one row, lastRequest the period's
// start (the guards of the counter-row protocol below compare it with the
// current period's start instead of now − Window, and a window opened or
// reset is given the period's start, not now). [Memory] keeps its counter
// likewise. A request whose clock still reads a period after another
// process, its clock ahead, opened the next one in that row or counter is
// denied, with nothing remaining until its own period ends: the row no
// longer holds its period's count, and counting it in the next period
// would admit it past its own period's Max. [Secondary] keeps one counter
// per period, named key + [SlidingSeparator] + the period's start in
// epoch milliseconds, living one period past its end (rounded up to a
// whole second), so that the storage's own clock never decides where a
// period ends and a late reading counts in its own period's counter;
// [Limiter.ResetRule] finds those counters
// ([Limiter.Reset], knowing no rule, cannot). [Calendar.Longest] bounds a
// period (25 hours, 7 days, 31 days and 366 days, each with an hour of
// daylight-saving time); [WithLongestWindow] is compared with it, so
// [Limiter.Prune] never deletes a live period's row.
//
// # Database storage
//
// Counters live in the rateLimit model (key, count, lastRequest in epoch
// milliseconds). A request claims cost units of its key's row with one
// guarded write when it can: under [BetterAuthWindow], count += cost and
// lastRequest := now guarded on the key, lastRequest > now − window and
// count ≤ max − cost; under [FixedWindow] with the window's start known
// (this process remembers the start it last saw stored for each key, in a
// bounded memory), count += cost guarded on lastRequest equal to that
// start and the same room, whose match proves the start, so the write
// answers the new count alone (IncrementValue); with the start unknown,
// count += cost guarded on a live window, answering the row, except where
// the adapter answers the count alone in fewer round trips than the row
// (MySQL: decided once, when core.New wraps the adapter), where it reads
// first. An allowed request in steady state thus costs one round trip.
// Only on a miss does it read the row, then: an over window is reset with
// count = cost, lastRequest = now, guarded on lastRequest ≤ the value
// read, so one concurrent caller wins; a missing row is created, and a
// unique conflict means a concurrent opener won; a full window is denied
// at the state read; a live one with room is claimed again, guarded on its
// start. Each pass that loses a race (a write that matched nothing, a
// conflict, a reset another caller made) counts one attempt, at most
// 10 by default ([WithMaxAttempts]) and never past the context's end; then
// the result is an error wrapping core.ErrContention.
//
// Before its first decision the storage checks that the table has what
// exactness depends on, such as the unique index on the key (see
// core.DB.CheckSchema), until the check succeeds once; a table that fails
// it gets no decision. Call [Limiter.CheckSchema] at start-up to fail early.
//
// # Sliding windows
//
// With [SlidingWindow] windows are aligned to multiples of Window since
// the epoch: window i starts at i×Window. A request of cost c at elapsed
// time e into window i is admitted when
//
//	cur + c + ceil(prev × (Window − e) / Window) ≤ Max
//
// where cur is window i's count and prev window i−1's: the previous
// window weighs by the part of it the last Window still covers, rounded
// up, in exact integer arithmetic, so a key never gets the 2×Max a fixed
// window allows across a boundary. Remaining is Max minus that sum after
// the request. An admission's Reset is the end of window i. A denial's
// Reset is the earliest instant the request fits, assuming nothing else is
// counted meanwhile: later in this window as the previous count's weight
// decays, or in the next, where this window's count becomes the previous
// one. When not even one unit fits (Remaining 0) it is the instant one unit
// fits, for any cost: the denial cache keeps the key until then, exactly.
// A cost above Max reports the end of window i. A counter weighs until
// the end of the next window and a denial may wait into it, so a Window
// longer than half the longest time.Duration is refused with
// core.ErrInvalid.
//
// Database storage keeps one row per key and window in the rateLimit
// model, named key + [SlidingSeparator] + the window number in decimal,
// with count the window's count and lastRequest its start; a key too long
// for the column with that suffix is named by its first characters and
// its SHA-256 instead. A decision reads both windows' rows in one query,
// then counts with one guarded write: count += c guarded on count ≤ Max −
// c − the weighted previous count (or creates the row, a unique conflict
// meaning a concurrent opener won); a denial is the read alone. A write
// that misses reads the current row again, at most [WithMaxAttempts]
// times. The previous window's row is read on every decision rather than
// remembered, so a write to it landing late, from a process whose clock is
// behind, still weighs. Rows are needed until two windows after their
// start: [Limiter.Prune] deletes a row once its window started twice the
// declared longest window ago, and a fixed-window limiter pruning the same
// table must declare at least twice the longest sliding window. Reset
// needs the rule to find the rows: use [Limiter.ResetRule].
//
// [Secondary] storage keeps a counter per key and window, named
// "ratelimit:" + key + "#" + the window number, living twice the window,
// and needs a driver.BoundedIncrementer (Redis has one): a decision reads the
// previous counter, then adds c to the current one bounded by Max − the
// weighted previous count, so a denial counts nothing. [Memory] keeps both
// counts in one entry per key, under its shard's lock. A key must be used
// under one mode and one rule.
//
// # Write combining
//
// With [WithWriteCombining], concurrent decisions of one limiter on one
// key and rule share guarded writes. A request that finds no write for its
// key in flight goes alone, on the path above, so a key that is not hot
// waits for nothing. Requests that arrive while a write is in flight
// queue, and when it ends they all go in the next write, run by the first
// of them: a claim of k, the sum of the costs that fit, through the same
// protocol as a lone request of cost k, with the guard count ≤ max − k.
// When it matches, each is admitted with the count it would have had if
// they had been served one after another in arrival order. When the
// protocol finds a state of the row in which k does not fit, requests
// whose cost does not fit what is left are denied at that state, and a
// further claim takes as many of the others as fit, and so on; a row
// without a live window is created or reset to the claim of those that
// fit. A request is thus admitted only by a guarded write that leaves the
// count at most max, and denied only at a state of the row in which it
// does not fit: when demand exceeds the limit exactly max units are
// admitted, never more, never fewer, across processes too, each combining
// its own requests. Checks (cost 0) and costs above max are not combined.
// A batch gives up after as many lost races as a request.
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
// key has at most one write in flight per limiter. The price is latency:
// a request that finds a write in flight waits for it and then for its
// own, up to two writes' time where a lone request takes one. So n
// callers that each send their next request once answered are served
// about n/2 per write: a hot key's rate is then about n/2 times the rate
// at which one writer alone updates its row. Two or three writes in
// flight per key were measured and served fewer requests on PostgreSQL
// and MariaDB: they split the batches, and a hot row there takes few
// more writes per second from a few writers than from one.
//
// # Leases
//
// Write combining folds one process's requests; several processes on one
// hot key still queue on its row. With [WithLeases] a limiter instead
// reserves units of a key's window in blocks: one guarded write claims a
// block of k (the protocol above, guard count ≤ max − k, so a block is
// never more than the window has left), and the requests that follow are
// admitted from it in memory, without I/O, until it is spent; callers on
// one key wait for one refill. A unit is spent only in the window it was
// claimed in, and every claimed unit is counted in the row, so no window
// admits more than its Max whatever the processes: over-admission is
// impossible by construction, not merely unlikely.
//
// What a lease holds unspent is the only under-admission: a request
// another process denies while units sit in this one's lease. It is at
// most the lease size per process and key, and smaller in practice, as
// blocks adapt to demand: a lease's first block is an eighth of the size,
// each refill within the lease time doubles it (up to the size), and a
// block is at most half of what the window had left at the last claim
// (at least the request's cost), so near the limit the blocks shrink to
// single units. When a block does not fit, the refill asks for half of
// what is left, and a request is denied only when what is left is less
// than its cost. One process alone on a key admits exactly Max.
//
// A lease ends with its window (its units lapse with the count), after
// [WithLeaseTime] unused ([Limiter.Prune] and StartPruning return it), or
// at [Limiter.Close], which returns every lease. A return is a guarded
// decrement on the window's start and on the count holding the units, so
// it never credits a window opened since; the units leave the lease
// before the write, so a failed return under-admits and never spends
// twice. A process that dies loses at most what its leases held, until
// the window ends. On Secondary storage the guard is the counter's tag
// (driver.LeaseReturner; on Redis 7 and later its absolute expiry, which
// a counter created anew at the key shares only when deleted and made
// again within the millisecond of its creation) and the count; a
// secondary storage without tags cannot tell one window of a counter from
// the next, so there an unused lease lapses with its window.
//
// Units a lease returns before its window ends serve the processes that
// have not cached the key's denial (see "Denial cache"); a process that
// has waits for the window's end, as it would after a [Limiter.Reset].
//
// [Limiter.Leased] reports the units a limiter holds; [Event].Leased
// those of the decision's key. [Limiter.Reset] drops the limiter's own
// leases of the key; another process's leases, claimed from the counter
// Reset deleted, are spent until they run out (at most the lease size
// each). Windows are each process's clock, as everywhere: with clock skew
// between servers a lease may spend its last units up to the skew after
// another server opened the next window. A view made by [Limiter.In]
// charges in the caller's transaction without leases.
//
// # GCRA
//
// With [GCRA] (the generic cell rate algorithm, a token bucket, as
// go-redis/redis_rate computes it) a [Rule] means Max units per Window,
// spaced T = Window/Max apart, with bursts of up to Max. T is rounded up
// to the millisecond, so the rate is never exceeded: 3 per second spaces
// requests 334 ms apart. Each key stores one theoretical arrival time, tat
// (epoch ms): a request of cost c is admitted iff max(tat, now) + c·T −
// now ≤ Max·T, and then tat becomes max(tat, now) + c·T. Remaining is
// ⌊(Max·T − (tat − now))/T⌋. Reset is, for an admitted request or a check,
// when the bucket is full again (tat); for a denial, when this request
// fits, now + RetryAfter, with RetryAfter = tat + c·T − Max·T − now. A
// full key admits nothing until a unit fits, so the denial cache below
// holds for GCRA too. A full bucket is Max·T ms ahead of now, which a
// RetryAfter must be able to wait: a rule whose Max·T exceeds the longest
// time.Duration (about 292 years; so Max at most about 9.2×10¹² with T of
// 1 ms) is refused with core.ErrInvalid rather than computed with
// overflow.
//
// On [Database] storage the tat lives in the rateLimit row's lastRequest
// (count stays 0): no schema change. An admitted request is one guarded
// write, one round trip: on a busy key (tat > now) the increment
// lastRequest += c·T guarded on the key, lastRequest > now and lastRequest
// ≤ now + Max·T − c·T, which returns the new tat; on an idle one (tat ≤
// now, an empty bucket) the set lastRequest := now + c·T guarded on
// lastRequest ≤ now, so one concurrent caller wins. The storage picks
// which to try first from the tat this process last saw for the key (a
// bounded memory; an unknown key tries the set). On a miss the row is
// read: none is created with tat now + c·T (a unique conflict means a
// concurrent opener won, so it tries again); a tat at or before now is
// set, one with room incremented, one too far ahead is a denial; a write
// after the read that misses means the row changed, and it tries again,
// within the same bound on lost races. A wrong guess costs round trips,
// never exactness: every guard is in the database. A key must be used
// with one algorithm: a fixed-window row read as a tat, or the reverse,
// decides nonsense. [Limiter.Prune] is safe: it deletes rows whose
// lastRequest is the longest window past, and a tat in the past is an
// empty bucket, exactly what a missing row means. [Memory] decides under
// the shard's lock and lets the entry expire at its tat. [Secondary] needs
// a storage with driver.TATAdvancer (core/memory's Storage and
// adapters/redis, one Lua script there), where the key expires at its
// tat; New refuses GCRA on one without it. Write combining counts fixed
// windows and does not serve GCRA.
//
// # Policies
//
// A [Policy] is several named rules on one key, such as 10 a second and
// 1000 a day, decided all or nothing by [Limiter.ConsumePolicy]: admitted
// only when every rule that is not a shadow rule admits, and then counted
// under each rule (a shadow rule counts what fits it); a denied request
// is counted under none. Rule n of a policy on key k keeps its own
// counter, named "{k}" + [PolicySeparator] + n, which no lone rule's key
// and no other policy's rule shares. The decision reports every rule in
// Decision.Rules and the binding one at its top (see ConsumePolicy).
//
// On [Database] storage a policy is decided in one transaction: each
// rule, in the order of the counters' keys, by the protocol of a lone
// request (above), and the transaction rolled back when a rule denies.
// Why a transaction rather than a guarded write per rule with refunds: a
// charge made before a later rule denies would be visible, until its
// refund, to every concurrent request, and could deny one of them that
// no order of the requests denies (the refunded request counted nothing),
// while a refund guarded only on the count could land in a window that
// has since been reset, and let a later request over the limit. In the
// transaction a rule's uncommitted charge is seen by no one: a concurrent
// writer of the row waits for the row's lock and then decides on the
// committed row (PostgreSQL re-evaluates its guard on the row as
// committed; MySQL's and MariaDB's updates read the current row), and
// every read of the protocol there is a locking one (see [Limiter.In]),
// not an old snapshot. So a request is admitted only if at its commit
// every rule's count, with its charge, is at most Max, and denied only at
// a committed state of one rule in which it does not fit, within its own
// lifetime: exact for every rule, with no wrongful denial. Two policies
// lock shared rows in one order (by key), and a transaction the database
// aborts (a deadlock, a serialization failure) is tried again as a
// whole, within [WithMaxAttempts]. It costs a transaction: BEGIN, one
// write per rule, COMMIT. Under [Limiter.In] the policy runs in a
// savepoint of the caller's transaction.
//
// Where the database can (core.DB.IncrementAll: PostgreSQL) and every
// rule's row exists, the same decision is one statement, one round trip:
// it locks the rows in key order (the transaction's order) with a locking
// read, which under READ COMMITTED waits for a concurrent writer and
// returns the row as committed; judges on those locked rows each rule's
// guarded writes of a lone request (in a live window with room, count +=
// cost; in a window that is over, count := cost and a new start; under
// GCRA the busy and idle writes of the tat); and writes every row only
// when every rule that is not a shadow rule holds (a shadow rule's row
// when its own guard holds). The UPDATE writes on the row's latest
// version, the locked one the guards judged, so the argument above holds
// as for the transaction: nothing can change a row between its judgement
// and its write, and a denial is judged, and reported for every rule, on
// rows as committed within the request's lifetime. Each rule's state is
// the memory storage's decision on its locked row, which the guards
// decide alike (a disagreement is an error, never a decision). A missing
// row (a key's first policy decision), SlidingWindow (whose current row
// is new every window), a view of [Limiter.In] (which keeps its
// savepoint, so that an error leaves the caller's transaction usable),
// and MySQL, MariaDB and SQLite (no data-modifying CTE; SQLite's one
// writer makes its transaction local anyway) take the transaction. The
// race tests over 1 and 4 pools, and one that catches the statement with
// its guards judged on an unlocked snapshot, keep it exact; see the bench.
//
// On [Secondary] storage a policy is one driver.PolicyApplier call
// (adapters/redis: one Lua script, its keys in one Cluster slot by their
// {k} hash tag; core/memory: under its shards' locks); a storage without
// it refuses policies (core.ErrInvalid): charging rule by rule there
// would have the flaw above. [Memory] decides a policy under one of its
// policy locks, picked by the key, which no lone decision takes and every
// policy on that key does. The denial cache keeps each rule's counter on
// its own: a rule found full denies the policy with no write until its
// window ends, its other rules then only read, to be reported. With
// [WithWriteCombining] a policy is not combined: it goes alone, in its
// transaction. [Limiter.CheckPolicy] reads each rule, one after another;
// [Limiter.ResetPolicy] clears every rule's counter, which [Limiter.Reset]
// on the key does not find.
//
// # Shadow mode
//
// A rule with Shadow set counts while it admits and never denies: what it
// would deny is admitted (uncounted by it), with Decision.WouldDeny set,
// the observer's outcome "shadow", and in a policy its RuleDecision's
// Allowed false. A shadow rule's storage failing admits. Roll a new limit
// out in shadow mode, watch what it would deny, then enforce it.
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
// increment (fixed windows only); with driver.BoundedIncrementer a denied
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
// # Design: the walk of one decision
//
// One allowed [Limiter.Consume] on [Database] storage under [FixedWindow],
// in steady state, from the call to the SQL statement and back, runs code
// in 11 files of 4 packages:
//
//   - limiter.go: ConsumeN validates the request, reads the clock, asks the
//     denial cache, calls the storage's consume with the limiter's mode,
//     and turns the state it reports into a [Decision];
//   - rule.go: the key's and the rule's validation, and the window the
//     request counts in (frame, under either kind of rule);
//   - bounded.go: the bounded maps of the denial cache and of the
//     remembered window starts;
//   - database.go: the storage picks the algorithm for the mode (GCRA and
//     SlidingWindow have their writes in database_gcra.go and
//     database_sliding.go) and claims cost units of the key's row through
//     the counter-row protocol (claim, increment, settle), which calls
//     core.DB's IncrementValue, IncrementOne, FindOne and Create;
//   - core's db.go (the DB checks and maps the request, its one table
//     lookup included) and request.go (the Where values and their
//     conversion to storage), then core/driver's types.go (the Table,
//     Where and Record it hands the adapter; ParseInt);
//   - adapters/sql's increment.go (IncrementValue's one UPDATE …
//     RETURNING), build.go (the statement from the cache, its arguments
//     bound), run.go (the round trip, under the retry policy) and, for
//     database/sql, sqldb.go (the executor).
//
// Measured with a coverage binary (go build -cover -coverpkg over the
// module's packages, runtime/coverage.ClearCounters before one decision
// on SQLite, go tool covdata textfmt). It was 23 files when the issue
// was filed (6 here, 6 of core, 3 of core/driver, 8 of the engine, at
// 69a9c97) and still 23 before the files were merged: key.go and
// policy.go (a rule's name) beside today's four here; db_value.go,
// naming.go and convert.go beside core's two; table.go, convert.go and
// roundtrips.go of core/driver; bind.go, stmtcache.go, mysql_value.go,
// records.go, dialect.go and errors.go beside the engine's four. The
// files that split one concern were merged, the engine reads its
// dialect's traits once, at open, and it enters errors.go only on an
// error. Under [GCRA] the walk adds database_gcra.go and gcra.go (13: the
// database's GCRA writes apart from gcra.go's arithmetic); under
// [WithWriteCombining], combine.go (12). A calendar rule adds
// calendar.go, its period.
//
// The algorithms are arithmetic over a key's counter, with no storage in
// them: window.go (fixed and Better Auth windows), sliding.go and gcra.go.
// [Memory] (memory.go) applies them to its counters under a shard's lock;
// [Secondary] (secondary.go) through the storage's atomic increments and
// driver.TATAdvancer; the database storage as the guards of its writes.
// combine.go queues a hot key's requests and splits each batch into claims
// of the same protocol. reset.go, prune.go and observe.go are the
// limiter's other operations.
//
// # HTTP
//
// Package sluicehttp (module github.com/sluice-go/sluice/middleware/http)
// limits each client IP per path with a Limiter, choosing each request's
// rule by path, and answers denials with 429, a JSON body, Retry-After and
// RateLimit-* headers. It checks its rules with [Limiter.CheckRule] when
// it is built, states Reset relative to [Limiter.Now], and stores its keys
// through [SafeKey], so that no path can make a key the database refuses.
package ratelimit
