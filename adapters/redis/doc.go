// Package sluiceredis is sluice's secondary storage on Redis: get, set with
// TTL, delete, atomic counters for the rate limiter, and atomic API-key
// claims for the API-key verifier's storage-only mode.
//
// # Counters
//
// [Storage.Increment] and [Storage.IncrementBounded] are one server-side
// script each, which sets a counter's expiry only when it creates the
// counter (never INCR then EXPIRE, which leaves an immortal counter when the
// second call is lost) and never extends it: a fixed window. A bounded
// increment that would pass the max changes nothing. Give
// ratelimit.Secondary a *Storage to count rate limits in Redis. TTLs must be
// positive whole numbers of seconds, checked before any I/O.
//
// # API keys
//
// *Storage implements keystore.Claimer and keystore.Indexer, so
// apikey.NewStorageOnly accepts it. An API key is one JSON record (an
// keystore.Key) at one Redis key. [Storage.Claim] reads it, decides
// exactly as keystore.Apply does (enabled, expiry, quota, refill, the
// per-key rate limit) and writes it back, keeping its expiry, in one Lua
// script: concurrent verifications on any number of servers can never both
// spend the last unit or both win a refill. [Storage.Patch] changes fields
// the same way, so an update never loses a concurrent claim.
//
// The scripts decode the record with cjson and compute in doubles, so they
// check what they read: an id must be below 2^53 and every other integer
// field within ±2^51 (sums of three stay exact); a record beyond that, or
// one Go's encoding/json would refuse (a field of the wrong type, an
// array), is an error, never a silently wrong answer. They write integers
// in full (cjson itself would round them to 14 digits), treat null and
// absent fields alike, as Go does, and keep fields apikey does not know.
// Two differences with encoding/json remain, neither of which Go or these
// scripts ever write: field names are matched exactly (Go ignores case) and
// an integer written as 1e3 or 1.0 is accepted.
//
// # GCRA and concurrency limits
//
// Storage.AdvanceTAT (driver.TATAdvancer) moves a GCRA key's theoretical
// arrival time in one script, so ratelimit.WithMode(ratelimit.GCRA) works on
// Secondary(storage); the key expires when its time is reached. The
// sliding window needs only IncrementBounded. *Storage is also a
// concurrency.Store: a concurrency key's slots are one hash (slot → lease
// end and generation), acquired, released and renewed by one script each
// step, and expiring when its last lease ends.
//
// # Clients and Redis Cluster
//
// Any redis.UniversalClient works: *redis.Client, *redis.Ring and
// *redis.ClusterClient. Every script reads and writes exactly one key (a
// counter, or an API key's record), so each runs on the node that owns that
// key's slot and no hash tag is needed for Redis Cluster; an API key's
// other keys (its id index and owner sets) are written by separate
// single-key commands, and storage-only mode never needs them in one
// script. Scripts are run by SHA1 (EVALSHA) and loaded again when Redis
// answers NOSCRIPT, after a restart or SCRIPT FLUSH. While [DefaultInFlight]
// counter scripts are in flight, the calls that follow are batched into one
// pipeline, each still its own script with its own answer ([WithInFlight]).
// Context deadlines are
// honoured; a Redis outage is an error, which the rate limiter turns into a
// denial by default (fail closed).
package sluiceredis
