// Package sqltest holds the tests and benchmarks of sluicesql that need
// modules the adapter itself does not: adaptertest's conformance and race
// suites, gen's DDL, and the PostgreSQL driver. They live in a module of
// their own so that a program requiring
// github.com/sluice-go/sluice/adapters/sql, or any adapter built on it, does
// not find them in its module graph. The package has no API; run its tests
// with go test.
package sqltest
