package sluicesql

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

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
	if errors.Is(err, errClusterAborted) {
		return retryable
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
	case retryable:
		if errors.Is(err, core.ErrContention) {
			return err // already says so (errClusterAborted)
		}
		return fmt.Errorf("%w: %w", core.ErrContention, err)
	case endedTx:
		return fmt.Errorf("%w: the transaction has ended (committed or rolled back) or was aborted by an earlier error; nothing was written: %w", core.ErrInvalid, err)
	default:
		return fmt.Errorf("%w: %w", classSentinels[cl], err)
	}
}
