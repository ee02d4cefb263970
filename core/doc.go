// Package core is the dependency-free heart of sluice: the adapter contract,
// the portable [DB] wrapper that every caller goes through, the transaction
// fallback for IncrementOne, and the schema of the rateLimit and apikey models.
//
// The central operation is [DB.IncrementOne]: apply field = field + delta (and
// optional absolute assignments) to at most one row, only while the where
// clauses still hold, in one atomic write, and return the row as it is after
// the write, or ok == false when the guard selected nothing. The rate limiter
// (package ratelimit) and the API-key verifier (package apikey) are built on it.
//
// Adapters implement the small [Adapter] interface, and optionally
// [Incrementer] and [Transactor]; like database/sql/driver, each optional
// interface documents what the wrapper does when it is absent. Adapters see
// physical table and column names and normalised values; callers see the
// logical names of the schema and typed values in a [Row].
package core
