// Package core is what an application calls to reach its database through
// sluice: the portable [DB] wrapper, the schema of the rateLimit and apikey
// models and its naming, and the errors every package of sluice reports.
//
// The central operation is [DB.IncrementOne]: apply field = field + delta (and
// optional absolute assignments) to at most one row, only while the where
// clauses still hold, in one atomic write, and return the row as it is after
// the write, or ok == false when the guard selected nothing. The rate limiter
// (package ratelimit) and the API-key verifier (package apikey) are built on it.
//
// A DB runs on an adapter: sluicesql for database/sql, or the adapter of
// your ORM (sluicegorm, sluicebun, sluiceent) or of pgx. Callers name
// models and fields by their logical names and get typed values in a
// [Row]; the adapter contract, with physical names, is package
// [github.com/sluice-go/sluice/core/driver], as database/sql's is
// database/sql/driver.
package core
