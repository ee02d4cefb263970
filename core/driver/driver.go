package driver

import (
	"context"
	"time"
)

// Adapter is the contract every storage implements. core.DB validates and
// normalises every request before an adapter sees it: names are physical,
// values are int64, string, bool, UTC time.Time truncated to the millisecond,
// or nil, and where clauses are well formed. The where clauses are joined by
// AND; an empty list matches every row.
//
// Errors: a unique-key violation must satisfy errors.Is(err, ErrConflict);
// anything else is passed through, wrapped once by DB.
type Adapter interface {
	// Create inserts one row and returns it as stored, with its primary key.
	// Columns left out take the database's defaults.
	Create(ctx context.Context, t *Table, values []Assignment) (Record, error)
	// FindOne returns the first matching row in primary-key order, or nil.
	FindOne(ctx context.Context, t *Table, where []Where) (Record, error)
	// FindMany returns the matching rows.
	FindMany(ctx context.Context, t *Table, where []Where, opts FindOptions) ([]Record, error)
	// Update sets columns on at most one matching row and returns it as
	// stored after the write, or nil when nothing matched.
	Update(ctx context.Context, t *Table, where []Where, set []Assignment) (Record, error)
	// UpdateMany sets columns on every matching row and returns how many rows
	// matched (not how many changed: on MySQL without clientFoundRows the
	// driver reports changed rows, and the adapter must make up for it).
	UpdateMany(ctx context.Context, t *Table, where []Where, set []Assignment) (int64, error)
	// Delete removes at most one matching row and reports whether it did.
	Delete(ctx context.Context, t *Table, where []Where) (bool, error)
	// DeleteMany removes every matching row and returns how many.
	DeleteMany(ctx context.Context, t *Table, where []Where) (int64, error)
	// Count returns the number of matching rows.
	Count(ctx context.Context, t *Table, where []Where) (int64, error)
}

// Incrementer is implemented by adapters with a native IncrementOne.
//
// IncrementOne applies every delta (column = column + By, computed by the
// database; NULL stays NULL) and every assignment to at most one row, chosen
// by where, in one atomic write during which where still holds: a concurrent
// change to that row re-evaluates the guard. It returns the row as stored
// after the write, or nil when the guard selected nothing. When several rows
// match, exactly one changes.
//
// When an adapter does not implement Incrementer, core.DB emulates IncrementOne
// with the adapter's [Transactor]: read one matching row, then update it by
// primary key, guarded on the original where plus each incremented column
// equal to the value read. A lost race rolls back and retries after a random
// pause (full jitter, the cap doubling from 1 ms up to 32 ms), for at most
// 100 transactions in all, then fails with [ErrContention]:
// one call pauses for at most about 3 s (1+2+4+8+16 ms, then 32 ms) on top of its
// transactions, enough for a loser to outlast a burst of 64 callers on one
// row. The context cuts it short: no pause or new attempt outlasts ctx, and
// a call that ctx ends returns ctx's error, not ErrContention. An adapter
// with neither interface is refused by core.New.
type Incrementer interface {
	IncrementOne(ctx context.Context, t *Table, where []Where, inc []Delta, set []Assignment) (Record, error)
}

// ReturningIncrementer is implemented by adapters whose IncrementOne can
// answer with only some columns of the row after the write: fewer columns
// to send, convert and scan for a caller that knows the rest (API-key
// verification, whose guard pins most of the row to the copy it planned
// from).
//
// IncrementReturning has IncrementOne's contract (see [Incrementer]) and
// returns the row after the write holding at least the columns of the
// fields named in returning (logical field names of t; a record may hold
// more), or nil when the guard selected nothing. core.DB calls it only
// with a non-empty returning list of t's fields.
type ReturningIncrementer interface {
	IncrementReturning(ctx context.Context, t *Table, where []Where, inc []Delta, set []Assignment, returning []string) (Record, error)
}

// Transactor is implemented by adapters that can run a function in a
// transaction. fn receives an adapter bound to the transaction; if fn
// returns an error the transaction rolls back and Transaction returns it.
// The transaction adapter may implement [Incrementer] too.
//
// Without Transactor, core.DB.InTx fails with [ErrUnsupported] and
// IncrementOne needs a native [Incrementer].
type Transactor interface {
	Transaction(ctx context.Context, fn func(ctx context.Context, tx Adapter) error) error
}

// Unwrapper is implemented by adapters that wrap an ORM object, to give
// callers an escape hatch to it: a *gorm.DB, a bun.IDB, an ent dialect.Driver.
type Unwrapper interface {
	Unwrap() any
}

// SchemaChecker is implemented by adapters that can inspect the tables they
// run on. CheckSchema reports, naming what is missing, when t lacks what
// exact decisions depend on: the table itself or one of its columns, a
// unique index on each field the schema marks
// Unique (without it, two concurrent first requests can each insert a
// counter for the same key), or a comparison that ignores trailing spaces
// on such a field (then two keys share one row). core.DB.CheckSchema runs it;
// adapters without it are taken as sound.
type SchemaChecker interface {
	CheckSchema(ctx context.Context, t *Table) error
}

// ValueIncrementer is implemented by adapters that can run an IncrementOne
// whose one delta is on a non-nullable column and answer with that
// column's value after the write rather than the whole row. On MySQL and
// MariaDB, where no UPDATE returns rows, that is one statement and one
// round trip, where the whole row takes a transaction.
//
// IncrementValue has IncrementOne's contract (see [Incrementer]: one
// atomic write to at most one row chosen by where, during which where
// still holds; overflow fails with [ErrInvalid] and writes nothing;
// deadlock victims retried) for the deltas {inc} and the assignments set,
// and returns inc.Column's value as stored after the write, with ok ==
// false when the guard selected nothing. core.DB calls it only with
// inc.By != 0 and a non-nullable column.
//
// ValueIncrementSaves reports whether IncrementValue takes fewer round
// trips than IncrementOne on the adapter's connection (the SQL engine: on
// MySQL, one statement instead of a transaction when the driver reports
// last insert ids; on PostgreSQL and SQLite no, both are one statement,
// though IncrementValue returns one column instead of the row). It is what
// core.DB.NativeValueIncrement reports, by which callers choose a path that
// trades a read for fewer round trips.
type ValueIncrementer interface {
	IncrementValue(ctx context.Context, t *Table, where []Where, inc Delta, set []Assignment) (value int64, ok bool, err error)
	ValueIncrementSaves() bool
}

// RecordOwner is implemented by an adapter whose records are new maps that
// nothing else refers to once returned, such as maps made for each row it
// reads. core.DB then turns each record into its core.Row in place, keyed by
// field names and typed, instead of copying it into a new map. An adapter
// that hands out maps it keeps (a cache, an in-memory table) must not
// implement it, or must return false.
type RecordOwner interface {
	// RecordsOwned reports whether every record the adapter returns is the
	// caller's to modify.
	RecordsOwned() bool
}

// TableCreator is implemented by adapters that can create the tables they
// run on. CreateTables creates those of tables that are missing, each
// with every index its fields declare (Unique, Index). It
// leaves existing tables alone: it never alters or drops one, nor adds an
// index to one, so a table made by other DDL keeps its shape and its rows
// (core.DB.CreateTables reports what such a table lacks). It is safe to call
// at every start and from several processes at once: a process that finds
// a table created by another since it looked counts it as created.
type TableCreator interface {
	CreateTables(ctx context.Context, tables []*Table) error
}

// TxBinder is implemented by adapters that can run on a transaction the
// caller began with the adapter's own ORM and ends themselves: a *sql.Tx,
// a *gorm.DB in a transaction, a bun.Tx, an ent transaction, a pgx.Tx.
// core.DB.WithTx calls it.
//
// BindTx returns an adapter bound to tx, of the same engine as the
// receiver (dialect, statement cache), that never commits or rolls tx back
// and whose [Transactor], when it has one, opens savepoints in tx. It
// refuses, with an error wrapping [ErrInvalid] and before any statement,
// a nil handle, a handle of a type it does not take, and one it can tell
// is not a transaction of the receiver's database without a round trip.
// A handle already committed or rolled back is told by its first
// statement, which fails wrapping ErrInvalid too.
type TxBinder interface {
	BindTx(tx any) (Adapter, error)
}

// LockingFinder is implemented by adapters that can read a row and lock
// it in one statement (SELECT … FOR UPDATE). core.DB.FindOneForUpdate
// calls it on a DB bound to a transaction.
//
// FindOneForUpdate returns the first matching row in primary-key order,
// or nil, as FindOne does. Inside a transaction it locks the row until
// the transaction ends and reads its latest committed version, waiting
// for a concurrent writer to end, where a plain read may answer from the
// transaction's snapshot (MySQL's REPEATABLE READ). Outside one, and on a
// database whose transactions already hold the whole database (SQLite),
// it is FindOne.
type LockingFinder interface {
	FindOneForUpdate(ctx context.Context, t *Table, where []Where) (Record, error)
}

// PairIncrementer is implemented by adapters that can run an IncrementOne
// whose one delta is on a non-nullable integer column and answer, in one
// statement, that column's value after the write and a second integer
// column's value, which the write leaves as it is, instead of the whole
// row (core.DB.IncrementPair).
//
// The write has IncrementOne's contract (see [Incrementer]) for where and
// the delta inc. core.DB has already added to where the guards that b
// states (0 ≤ inc.Column + inc.By ≤ b.ValueMax, b.Min ≤ b.Column ≤ b.Max),
// so an adapter may rely on both values lying in their ranges: on MySQL
// and MariaDB, which have no UPDATE … RETURNING, the SQL engine packs the
// two into the one integer LAST_INSERT_ID(expr) reports. An adapter that
// cannot answer this request in one statement returns [ErrNoPair] having
// written nothing, and core.DB runs IncrementOne instead.
type PairIncrementer interface {
	IncrementPair(ctx context.Context, t *Table, where []Where, inc Delta, b PairBounds) (value, other int64, ok bool, err error)
}

// AllIncrementer is implemented by adapters that can apply guarded writes
// to several rows, each chosen by its value of one unique column, all of
// them or none, in one statement (core.DB.IncrementAll): the rate
// limiter's policies (several rules on one key) decide in one round trip
// where a transaction takes BEGIN, a write per rule and COMMIT.
//
// IncrementAll locks the rows whose column holds a write's Key, in the
// byte order of the keys (so that two calls, and two transactions that
// lock the same rows in that order, never deadlock each other), and reads
// their latest committed versions. On those locked rows it picks, for
// each write, the first of its Cases whose Where holds. When every row
// exists and every write that is not Optional has such a case, it applies
// each picked case (its Inc deltas and Set assignments, computed on the
// locked row) and ok is true; otherwise it writes nothing and ok is
// false. Either way it reports, in each write, Row (the row as locked,
// before any write; nil when there is none) and Case (the index of the
// picked case, or -1). No concurrent write can come between the read and
// the writes: the rows stay locked until the statement (and a caller's
// transaction around it) ends.
//
// An adapter that cannot do it in one statement (the SQL engine declares
// it for PostgreSQL alone) returns [ErrNoAll] having written nothing; so
// does core.DB for an adapter without the interface. The caller then
// decides in a transaction, as it would without this capability.
type AllIncrementer interface {
	IncrementAll(ctx context.Context, t *Table, column string, writes []RowWrite) (ok bool, err error)
}

// PolicyApplier is an optional [SecondaryStorage] capability for the rate
// limiter's policies (several rules on one key, all or nothing): apply
// several steps on several keys in one atomic step, all of them or none.
// adapters/redis runs them in one Lua script and core/memory under its
// locks. Without it the rate limiter refuses policies on that storage.
//
// Each step is a bounded increment ([BoundedIncrementer]: By, Max, TTL)
// or, with TAT set, a TAT advance ([TATAdvancer]: Now, By as the
// increment, Max as the limit). A step fits when it would succeed alone.
// When every step that is not Optional fits, ApplyPolicy applies each
// step that fits (every required one, and the optional ones that fit) and
// ok is true; otherwise it changes nothing and ok is false. Either way it
// reports, in each step, whether it fits and the counter as it was before
// the call: Value (0 when absent; for a TAT step, the stored TAT) and
// TTL (0 when absent or without expiry).
//
// The keys of one call must be able to meet in one atomic step: on Redis
// Cluster, in one slot; the rate limiter's keys of one policy share a hash
// tag ({key}).
type PolicyApplier interface {
	ApplyPolicy(ctx context.Context, steps []PolicyStep) (ok bool, err error)
}

// SecondaryStorage is a key-value store with expiry, such as Redis, used by
// the rate limiter and the API-key verifier as an alternative to the
// database. Implementations: core/memory (in process) and adapters/redis.
type SecondaryStorage interface {
	// Get returns the value at key and ok == false when there is none.
	Get(ctx context.Context, key string) (value string, ok bool, err error)
	// Set stores value at key; ttl 0 means no expiry.
	Set(ctx context.Context, key, value string, ttl time.Duration) error
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Increment adds by to the counter at key in one atomic step. When the
	// counter does not exist it is created with value by and expiry ttl;
	// an existing counter's expiry is never extended (a fixed window).
	// ttl must be positive.
	Increment(ctx context.Context, key string, by int64, ttl time.Duration) (Counter, error)
}

// BoundedIncrementer is an optional [SecondaryStorage] capability: add by
// only when the result stays at or below max, in one atomic step, so that a
// denied request leaves the counter as it was. ok is false when it would not
// fit; c then holds the current, unchanged counter (Value 0 when absent).
//
// Without it the rate limiter uses Increment, and a denied request still
// counts until the window ends.
type BoundedIncrementer interface {
	IncrementBounded(ctx context.Context, key string, by, max int64, ttl time.Duration) (c Counter, ok bool, err error)
}

// LeaseReturner is an optional [BoundedIncrementer] capability for the
// rate limiter's leases (ratelimit.WithLeases): it lets a lease give the
// units it claimed and did not spend back to the counter it claimed them
// from, and never to a counter created at the same key since.
//
// ClaimBounded is IncrementBounded that also returns the counter's tag,
// which names this counter among all those ever created at key: its
// creation fixes it and nothing changes it (Redis: the counter's absolute
// expiry in milliseconds, which a counter never extends: a counter that
// expired was created a whole window before the next one, and only one
// deleted and created again within the millisecond of its creation shares
// it, the same bound as the database's guard on a window's start). A tag of 0 or
// less means the storage cannot tell (no counter, or one without expiry);
// the units claimed then are never returned.
//
// ReturnClaimed subtracts n from the counter at key in one atomic step when
// the counter still has tag and holds at least n, and reports whether it
// did; otherwise nothing changes.
type LeaseReturner interface {
	BoundedIncrementer
	ClaimBounded(ctx context.Context, key string, by, max int64, ttl time.Duration) (c Counter, ok bool, tag int64, err error)
	ReturnClaimed(ctx context.Context, key string, n, tag int64) (bool, error)
}

// TATAdvancer is an optional [SecondaryStorage] capability for the rate
// limiter's GCRA mode: advance the theoretical arrival time (TAT) stored
// at key, in one atomic step. Times are epoch milliseconds of the caller's
// clock, passed as now; the storage's own clock only runs the expiry.
//
// Let t be the stored TAT, or now when there is none or it is earlier.
// When t + increment − now ≤ limit, the TAT becomes t + increment and ok
// is true; otherwise nothing changes and ok is false. tat is the TAT after
// the call (t when refused). A written key expires t + increment − now
// after the call, when its TAT is reached: a TAT at or before now means
// the same as none. An increment of 0 writes nothing and reads t, with ok
// reporting t − now ≤ limit. now, increment and limit must not be
// negative; Redis computes in doubles, so keep them below 2^51.
//
// Without it the rate limiter refuses GCRA on that storage.
type TATAdvancer interface {
	AdvanceTAT(ctx context.Context, key string, now, increment, limit int64) (tat int64, ok bool, err error)
}
