// Package gormtest holds the tests and benchmarks of sluicegorm that need
// modules the adapter itself does not: adaptertest's conformance and race
// suites, and the PostgreSQL and MySQL drivers for gorm and database/sql.
// They live in a module of their own so that a program requiring
// github.com/sluice-go/sluice/adapters/gorm does not find them in its module
// graph. The package has no API; run its tests with go test.
package gormtest
