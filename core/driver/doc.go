// Package driver is the contract between sluice and a storage: what an
// adapter for a database (through its driver or ORM) or a key-value store
// implements. Applications do not call it; they call package core, whose
// DB runs every request through an [Adapter], as database/sql runs its
// queries through database/sql/driver.
//
// An adapter implements [Adapter] and, optionally, [Incrementer], [ReturningIncrementer],
// [Transactor], [ValueIncrementer], [SchemaChecker], [TableCreator],
// [RecordOwner], [PairIncrementer], [AllIncrementer] and [Unwrapper];
// each optional interface documents what core does when it is absent. A key-value store implements
// [SecondaryStorage] and, optionally, [BoundedIncrementer] and
// [TATAdvancer].
//
// An adapter sees physical names and normalised values: a [Table] whose
// columns carry their database names, a [Where] that names a column (where
// core's Where names a field of the model), and values that are int64,
// string, bool, UTC time.Time truncated to the millisecond, or nil. It
// answers with a [Record] keyed by column names, in whatever form its
// driver produced; [ParseInt] and [ParseTime] read those forms.
//
// As in database/sql/driver, driver.go holds the interfaces, what an
// adapter or a storage implements, and no code; types.go the values they
// pass (Table, Where, Record, …), the round-trip counter and the forms of
// text, times and integers; errors.go the sentinels an adapter answers
// with.
//
// Package adaptertest is the conformance and race suite that every
// adapter and storage runs.
package driver
