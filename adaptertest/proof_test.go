package adaptertest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// This file holds what the suite's own tests use to prove that a case can
// fail: a recorder that stands in for a case's testing.TB, and record,
// which runs a case with one.

// recorder is a testing.TB that records failures and skips instead of
// reporting them, so that a test can assert that a case fails. FailNow and
// SkipNow end the calling goroutine, as testing.T's do; everything else
// (Helper, Logf, Cleanup, Name) is the real test's.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	messages []string
	failed   bool
	skipped  bool
}

func (r *recorder) note(failed bool, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if failed {
		r.failed = true
	} else {
		r.skipped = true
	}
	if msg != "" {
		r.messages = append(r.messages, msg)
	}
}

func (r *recorder) Fail()                             { r.note(true, "") }
func (r *recorder) FailNow()                          { r.note(true, ""); runtime.Goexit() }
func (r *recorder) Error(args ...any)                 { r.note(true, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.note(true, fmt.Sprintf(format, args...)) }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) SkipNow()                          { r.note(false, ""); runtime.Goexit() }
func (r *recorder) Skip(args ...any)                  { r.note(false, fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) Skipf(format string, args ...any) {
	r.note(false, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

// summary is the first recorded failure, without testify's trace lines.
func (r *recorder) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.messages) == 0 {
		return "(no message)"
	}
	msg := r.messages[0]
	if i := strings.Index(msg, "Error:"); i >= 0 {
		msg = msg[i+len("Error:"):]
	}
	if i := strings.Index(msg, "Test:"); i >= 0 {
		rest := msg[i:]
		msg = msg[:i]
		if j := strings.Index(rest, "Messages:"); j >= 0 {
			msg += " | " + rest[j+len("Messages:"):]
		}
	}
	return strings.Join(strings.Fields(msg), " ")
}

// record runs c on f with a recorder in place of the test, and returns
// the recorder: the proof tests assert on what it saw.
func record[F any](t testing.TB, c testCase[F], f F) *recorder {
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(rec, f)
	}()
	<-done
	return rec
}

// runRecorded runs a case of [Run] on a fresh fixture of newHarness and
// returns its recorder. The fixture skips t when the harness lacks what
// the case needs, so that a proof on a skipped case does not pass.
func runRecorded(t *testing.T, newHarness HarnessMaker, c dbCase) *recorder {
	t.Helper()
	return record(t, c, newFixture(t, newHarness, c.needs))
}

// caseNamed returns the case of cases named name, failing t without one.
func caseNamed[F any](t testing.TB, cases []testCase[F], name string) testCase[F] {
	t.Helper()
	for _, c := range cases {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no case named %q", name)
	return testCase[F]{}
}
