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
	// ErrUnavailable reports that the database cannot be reached or is not
	// serving: a connection refused, reset or timed out, a server shutting
	// down or out of connections, a cluster node not ready or outside the
	// primary component (Galera's errors 1047 and 1180). It is an outage,
	// not a bug: retry later, or on another node.
	ErrUnavailable = errors.New("database unavailable")
	// ErrAuth reports that the database refused the connection's
	// credentials: a wrong user or password, or a user not allowed to
	// connect to this database from this host.
	ErrAuth = errors.New("database authentication refused")
	// ErrWrongDatabase reports a database of another family than the one
	// the adapter was opened for, such as a MySQL server opened as
	// PostgreSQL.
	ErrWrongDatabase = errors.New("wrong database family")
)

// ErrNoPair is what a [PairIncrementer] returns for a request it cannot
// answer in one statement (for the SQL engine on MySQL: ranges too wide to
// pack into one integer, or an executor whose results carry no last insert
// id). Nothing was written.
var ErrNoPair = errors.New("driver: the pair increment needs more than one statement here")

// ErrNoAll is what an [AllIncrementer] returns for a request it cannot
// answer in one statement. Nothing was written.
var ErrNoAll = errors.New("driver: the writes need more than one statement here")
