// Package redistest holds the tests and benchmarks of sluiceredis that need
// modules the adapter itself does not: adaptertest's storage conformance
// and race suites, and github.com/go-redis/redis_rate, which the benchmarks
// compare with. They live in a module of their own so that a program
// requiring github.com/sluice-go/sluice/adapters/redis does not find them in
// its module graph. The package has no API; run its tests with go test.
package redistest
