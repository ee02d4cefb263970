// Package pgxtest holds the tests and benchmarks of sluicepgx that need
// modules the adapter itself does not, chiefly adaptertest's conformance and
// race suites. They live in a module of their own so that a program
// requiring github.com/sluice-go/sluice/adapters/pgx does not find them in
// its module graph. The package has no API; run its tests with go test.
package pgxtest
