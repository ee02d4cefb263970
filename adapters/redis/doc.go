// Package sluiceredis is sluice's secondary storage on Redis: get, set with
// TTL, delete, and atomic counters whose expiry is set once, when they are
// created, by one server-side script (never INCR then EXPIRE, which leaves
// an immortal counter when the second call is lost).
//
// It works with a plain client, a cluster client and a ring (any
// redis.UniversalClient). Scripts run by hash and are reloaded on NOSCRIPT;
// context deadlines are honoured; a Redis outage surfaces as an error, which
// the rate limiter turns into a denial by default (fail closed).
package sluiceredis
