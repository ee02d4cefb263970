package driver

import "errors"

// Sentinel errors. Every error that core.DB returns wraps exactly one of them
// when it applies, so callers can test with errors.Is.
var (
	// ErrNotFound reports that a row that had to exist does not.
	ErrNotFound = errors.New("not found")
	// ErrConflict reports a unique-key conflict. Adapters wrap their
	// driver's unique-violation error with it.
	ErrConflict = errors.New("unique conflict")
	// ErrContention reports that a guarded write kept losing races and gave up.
	ErrContention = errors.New("contention")
	// ErrInvalid reports a request rejected before any I/O.
	ErrInvalid = errors.New("invalid request")
	// ErrUnsupported reports an operation the adapter cannot perform.
	ErrUnsupported = errors.New("unsupported")
	// ErrSchema reports a table that lacks what exact decisions depend on,
	// such as the unique index on a rate-limit key (see core.DB.CheckSchema).
	ErrSchema = errors.New("schema unfit for exact decisions")
)
