package sluicesql

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"github.com/sluice-go/sluice/core/driver"
	"io"
	"math/rand/v2"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-go/sluice/core"
)

// class is what an error means to the engine. This file is the one place
// that decides it; the adapters built on the engine hand it their errors.
type class uint8

const (
	other       class = iota
	conflict          // a unique key is taken: core.ErrConflict
	retryable         // the database gave up on this statement or transaction because of concurrent writers; nothing took effect
	invalidIn         // the database refused a value: core.ErrInvalid
	unavailable       // the database cannot be reached or is not serving: core.ErrUnavailable
	authRefused       // the database refused the credentials: core.ErrAuth
	foreign           // the database is of another family: core.ErrWrongDatabase
	endedTx           // the caller's transaction has ended or was aborted: core.ErrInvalid
)

// mysqlErrorText matches go-sql-driver/mysql's "Error 1062 (23000): …" and
// its older "Error 1062: …", so that no driver need be imported.
var mysqlErrorText = regexp.MustCompile(`Error (\d{4,5})(?: \([0-9A-Z]{5}\))?:`)

// code extracts err's code and the family of the driver that gave it:
// from the executor's Codes first (the adapter's own family), then from
// the methods and text of the drivers the engine knows: a SQLState()
// method is PostgreSQL's (pgx, lib/pq), a Code() int method SQLite's
// (modernc.org/sqlite, glebarez/go-sqlite), "Error 1062 (23000)" MySQL's.
func (e *engine) code(err error) (string, Dialect, bool) {
	if e.opts.Codes != nil {
		if c, ok := e.opts.Codes(err); ok {
			return c, e.features.Dialect, true
		}
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return st.SQLState(), Postgres, true
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		return strconv.Itoa(coded.Code()), SQLite, true
	}
	if m := mysqlErrorText.FindStringSubmatch(err.Error()); m != nil {
		return m[1], MySQL, true
	}
	return "", e.features.Dialect, false
}

// classify tells what err means. A code is read in the family of the
// driver that gave it; an error without one is a broken connection when
// the network says so, and otherwise read by the dialect's messages.
func (e *engine) classify(err error) class {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return other
	}
	if e.endedTx(err) {
		return endedTx
	}
	msg := err.Error()
	c, fam, ok := e.code(err)
	cl := classes[fam]
	for _, m := range cl.messages {
		if strings.Contains(msg, m.text) {
			return m.class
		}
	}
	if cl.primaryCodes && !slices.Contains(cl.conflict, c) {
		if n, err := strconv.Atoi(c); err == nil {
			c = strconv.Itoa(n & 0xff) // the primary result code: SQLITE_BUSY_SNAPSHOT is a BUSY
		}
	}
	if !ok {
		if brokenConnection(err) || slices.ContainsFunc(classes[fam].unavailableText, func(t string) bool { return strings.Contains(msg, t) }) {
			return unavailable
		}
		return other
	}
	switch {
	case slices.Contains(cl.conflict, c):
		return conflict
	case slices.Contains(cl.retryable, c):
		return retryable
	case slices.Contains(cl.invalid, c):
		return invalidIn
	case slices.Contains(cl.unavailable, c):
		return unavailable
	case slices.Contains(cl.auth, c):
		return authRefused
	case slices.Contains(cl.foreign, c), fam != e.features.Dialect:
		return foreign // a server of another family answered
	}
	return other
}

// brokenConnection reports a connection the network refused, reset or
// timed out, or one database/sql found broken.
func brokenConnection(err error) bool {
	var ne net.Error
	var op *net.OpError
	return errors.As(err, &op) || (errors.As(err, &ne) && ne.Timeout()) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF)
}

// classSentinels are the core sentinels of the classes that have one.
var classSentinels = [...]error{
	conflict:    core.ErrConflict,
	retryable:   core.ErrContention,
	invalidIn:   core.ErrInvalid,
	unavailable: core.ErrUnavailable,
	authRefused: core.ErrAuth,
	foreign:     core.ErrWrongDatabase,
}

// mapErr wraps err with the core sentinel of its class. A retryable error
// that reaches here was not retried (it happened inside a transaction the
// engine does not own, or retries ran out): it is core.ErrContention.
func (e *engine) mapErr(err error) error {
	switch cl := e.classify(err); cl {
	case other:
		return err
	case invalidIn:
		return fmt.Errorf("%w: the database refused a value: %w", core.ErrInvalid, err)
	case endedTx:
		return fmt.Errorf("%w: the transaction has ended (committed or rolled back) or was aborted by an earlier error; nothing was written: %w", core.ErrInvalid, err)
	default:
		return fmt.Errorf("%w: %w", classSentinels[cl], err)
	}
}

// Retry policy. A statement that ran alone (autocommit) and failed as
// retryable took no effect, and neither did a transaction the engine owns
// that failed so: both run again, after a pause with full jitter that
// doubles up to a cap, at most maxAttempts times in all and never past the
// context. Inside a transaction the caller owns nothing is retried: the
// whole transaction is the unit, and it is the caller's to repeat.
const (
	maxAttempts  = 12
	retryBackoff = time.Millisecond
	retryCap     = 64 * time.Millisecond
	// retryBudget is how long a run of retryable failures is retried at
	// least, past maxAttempts: under SERIALIZABLE on a loaded server the
	// aborts come in runs, and a count alone ran out within a few hundred
	// milliseconds (bench/leases, uniform keys at SERIALIZABLE).
	retryBudget = time.Second
)

// retry runs op until it succeeds, fails for another reason, or the
// attempts (or the engine's wait for a busy database) or the context run
// out.
func (a *Adapter) retry(ctx context.Context, op func() error) error {
	var err error
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err = op()
		if err == nil || a.inTx || a.e.classify(err) != retryable {
			return a.e.mapErr(err)
		}
		if !a.e.again(attempt, start) {
			return fmt.Errorf("%w: gave up after %d attempts: %w", core.ErrContention, attempt+1, err)
		}
		driver.AddRetries(ctx, 1)
		if werr := pause(ctx, attempt); werr != nil {
			return fmt.Errorf("%w: %w (while waiting to retry: %w)", core.ErrContention, err, werr)
		}
	}
}

// again reports whether a retryable failure of attempt (counted from 0),
// in a run that began at start, is tried once more: up to maxAttempts in
// all, and beyond them for retryBudget, or while the engine waits for a
// busy database itself (SQLite) when that is longer.
func (e *engine) again(attempt int, start time.Time) bool {
	return attempt < maxAttempts-1 || time.Since(start) < max(e.busyWait, retryBudget)
}

// retried is retry for an operation with a result.
func retried[T any](a *Adapter, ctx context.Context, op func() (T, error)) (T, error) {
	var out T
	err := a.retry(ctx, func() (err error) {
		out, err = op()
		return err
	})
	return out, err
}

// pause waits a random time below retryBackoff·2^attempt (capped), or
// until ctx ends.
func pause(ctx context.Context, attempt int) error {
	limit := retryBackoff << min(attempt, 16)
	if limit > retryCap {
		limit = retryCap
	}
	t := time.NewTimer(time.Duration(rand.Int64N(int64(limit)) + 1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
