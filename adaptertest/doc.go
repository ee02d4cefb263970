// Package adaptertest is sluice's conformance and race suite. Every adapter
// in the sluice repository runs it, and so can yours: implement a [Harness]
// that creates tables and returns your adapter, then call [Run] from a test.
//
// # Running the suite against your adapter
//
// A harness gives the suite a fresh adapter for every subtest, on tables
// named for that subtest (so that tests sharing a database never collide).
// The suite finds out by type assertion whether the adapter implements
// driver.Incrementer and driver.Transactor, and skips, with the reason, what
// needs a missing one; the harness declares in [Capabilities] only what
// cannot be found out that way (whether MakePeer opens independent pools).
//
//	type harness struct{ db *sql.DB; s *core.Schema }
//
//	func newHarness(ctx context.Context, t *testing.T) (adaptertest.Harness, error) {
//		db, err := sql.Open("pgx", adaptertest.PostgresDSN(t)) // skips when not configured
//		if err != nil {
//			return nil, err
//		}
//		db.SetMaxOpenConns(16) // many suites may share one server
//		db.SetMaxIdleConns(16) // the default 2 would reconnect all the time under the races
//		return &harness{db: db}, nil
//	}
//
//	func (h *harness) MakeAdapter(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
//		h.s = s
//		ddl, err := gen.DDL(s, gen.Postgres) // or your own CREATE TABLEs
//		if err != nil {
//			return nil, err
//		}
//		for _, stmt := range ddl {
//			if _, err := h.db.ExecContext(ctx, stmt); err != nil {
//				return nil, err
//			}
//		}
//		return myadapter.New(h.db), nil
//	}
//
//	func (h *harness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
//		return nil, errors.New("not declared") // called only with SeveralPools
//	}
//
//	func (h *harness) Capabilities() adaptertest.Capabilities {
//		return adaptertest.Capabilities{SeveralPools: false} // only what the suite cannot find out
//	}
//
//	func (h *harness) Close() {
//		for _, stmt := range gen.DropDDL(h.s, gen.Postgres) {
//			h.db.Exec(stmt)
//		}
//		h.db.Close()
//	}
//
//	func TestConformance(t *testing.T) { adaptertest.Run(t, newHarness) }
//
// Run it with the race detector, which the race cases are written for:
//
//	SLUICE_POSTGRES_DSN='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' go test -race -run TestConformance
//
// [PostgresDSN], [MySQLDSN] and [RedisAddr] read the servers from the
// environment and skip the test without them (fail it when CI=true);
// [SQLiteDSN] makes a database in the test's temporary directory and needs
// no setup.
//
// # How the suite reads
//
// Every case of every entry point is one value of one type: a name (its
// subtest), the sentence of the contract it checks (printed when it
// fails), what it needs of the adapter or the harness, and its body. Each
// entry point has one list of named cases, each list on one screen:
// contractCases, raceCases, rateLimitCases and apiKeyCases in suite.go
// ([Run]), storageSequentialCases and storageRaceCases in storage.go
// ([RunStorage]), concurrencyCases in concurrency.go
// ([RunConcurrencyStores]) and processCases in processes.go
// ([RunProcesses]). Variants are entries of their own: GuardedDecrement,
// GuardedDecrementSeveralPools, GuardedDecrementFallback and
// GuardedDecrementFallbackSeveralPools are one body, four names and four
// sets of needs. Each body lives in a file named for its subject
// (contract_increment.go, contract_transactions.go, storage_claims.go, …),
// next to the sentence it checks.
//
// A case that needs what the adapter lacks (driver.Transactor,
// driver.Incrementer, core's fallback over both, a storage's optional
// interfaces) or what the harness does not declare (SeveralPools,
// SeveralClients) skips with the reason. The suite's own tests prove it on
// map-based adapters with IncrementOne and no transactions, transactions
// and no IncrementOne, and both on one pool and on several, checking which
// cases ran and which skipped.
//
// # What the suite checks
//
// Contract cases run one at a time, each on fresh tables, each a subtest
// named for what it checks (Contract/PositiveDelta,
// Contract/Fallback/GuardMissChangesNothing, …): deltas and assignments,
// the returned row, guard misses, every operator on int, string and time
// fields, NULL semantics, several matching rows, validation before I/O,
// rows matched rather than rows changed, times across zones, the rest of
// the CRUD surface, unique conflicts and transactions. Further cases hold
// every adapter to one behaviour where sluice's SQL adapters once differed:
// a nested transaction (a savepoint) rolls back only its own writes;
// strings that are not valid UTF-8 or hold NUL are refused before any
// write, and keys that differ only by trailing spaces, case or Unicode
// normalisation stay distinct and round-trip byte for byte; an increment
// past MaxInt64 or MinInt64 is ErrInvalid and changes nothing; and a unique
// conflict inside a transaction is ErrConflict and leaves the transaction
// usable. The IncrementOne cases run again, under Fallback/, through core's
// transaction fallback.
//
// Race cases release many goroutines at once (see [Release]) on one row or
// a few, and check exact outcomes: a guarded decrement from L admits exactly
// L callers and stops at 0, a bounded increment admits exactly max, a
// compare-and-set reset has exactly one winner, and a guard matching several
// rows admits exactly their total budget with no false miss. Each race runs
// on one pool, over several independent pools when the harness declares
// SeveralPools, and through the fallback. One more race mixes, on one table
// and over several pools, guarded increments, inserts, rows deleted right
// after their insert and prunes of expired rows: the deadlocks and
// serialization failures this provokes (MariaDB error 1213) must be retried
// inside the adapter, so every call succeeds and the counts are exact.
//
// The rate-limit and API-key cases run sluice's limiter and key verifier
// on the adapter under the same kind of load, on a [Clock] the case moves.
//
// # Every case can fail
//
// The suite's own tests run each case with a recorder in place of its
// testing.TB and require it to fail against an adapter broken for its
// rule: the 42 races that reach the adapter's own IncrementOne against a
// non-atomic adapter (read, compute, write by id), every contract case
// against adapters broken in one way each (nested transactions that do not
// roll back, collations that ignore trailing spaces, case or
// normalisation, overflow that wraps or is misreported, conflicts that
// abort the transaction or lose their class; exactly the cases for that
// rule must fail), the mixed race against an adapter that returns its
// deadlock victims, the storage races against a storage that reads,
// computes and writes, and the concurrency races against a store that
// takes a slot it read as free.
package adaptertest
