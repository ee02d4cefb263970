package core

import (
	"errors"
	"fmt"

	"github.com/sluice-go/sluice/core/driver"
)

// Sentinel errors. Every error that [DB] returns wraps exactly one of them
// when it applies, so callers can test with errors.Is. They are the
// sentinels of package driver, which adapters wrap: the same values.
var (
	// ErrNotFound reports that a row that had to exist does not.
	ErrNotFound = driver.ErrNotFound
	// ErrConflict reports a unique-key conflict.
	ErrConflict = driver.ErrConflict
	// ErrContention reports that a guarded write kept losing races and gave up.
	ErrContention = driver.ErrContention
	// ErrInvalid reports a request rejected before any I/O.
	ErrInvalid = driver.ErrInvalid
	// ErrUnsupported reports an operation the adapter cannot perform.
	ErrUnsupported = driver.ErrUnsupported
	// ErrSchema reports a table that lacks what exact decisions depend on,
	// such as the unique index on a rate-limit key (see [DB.CheckSchema]).
	ErrSchema = driver.ErrSchema
	// ErrUnavailable reports a database that cannot be reached or is not
	// serving (refused, timed out, shutting down, out of connections, a
	// cluster node not ready): an outage, which a limiter's failure policy
	// handles (see ratelimit.WithFailOpen).
	ErrUnavailable = driver.ErrUnavailable
	// ErrAuth reports that the database refused the credentials.
	ErrAuth = driver.ErrAuth
	// ErrWrongDatabase reports a database of another family than the
	// adapter was opened for.
	ErrWrongDatabase = driver.ErrWrongDatabase
)

// Error is the error type returned by [DB]. It names the operation and model,
// and wraps a sentinel (Kind, possibly nil) and the underlying cause.
type Error struct {
	Op    string // the DB method, such as "IncrementOne"
	Model string // the logical model, such as "rateLimit"
	Kind  error  // one of the sentinels, or nil
	Err   error  // the cause; for invalid requests, a description
}

// Error formats as "sluice: Op model: kind: cause".
func (e *Error) Error() string {
	msg := "sluice: " + e.Op
	if e.Model != "" {
		msg += " " + e.Model
	}
	if e.Kind != nil && (e.Err == nil || !errors.Is(e.Err, e.Kind)) {
		msg += ": " + e.Kind.Error()
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the sentinel and the cause, so errors.Is matches both.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// invalid builds the error for a request rejected before I/O.
func invalid(op, model, format string, args ...any) error {
	return &Error{Op: op, Model: model, Kind: ErrInvalid, Err: fmt.Errorf(format, args...)}
}

// wrap wraps an adapter's error exactly once: an error that is already an
// *Error (from a nested DB, say inside a transaction) is returned as it is.
func wrap(op, model string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var kind error
	for _, s := range []error{ErrNotFound, ErrConflict, ErrContention, ErrInvalid, ErrUnsupported, ErrSchema, ErrUnavailable, ErrAuth, ErrWrongDatabase} {
		if errors.Is(err, s) {
			kind = s
			break
		}
	}
	return &Error{Op: op, Model: model, Kind: kind, Err: err}
}
