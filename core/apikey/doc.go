// Package apikey creates, verifies and manages API keys on top of a
// [core.DB], with quotas, periodic refills and a per-key rate limit that stay
// exact however many servers verify the same key at once.
//
// A key is shown to its owner once, at creation; only its SHA-256 hash
// (base64url without padding, the same as Better Auth) is stored. [Manager.Verify]
// spends a key's quota and its rate-limit slot in one guarded
// [core.DB.IncrementOne]: the refill, the quota decrement, the rate-limit
// step and the updatedAt stamp are combined, so a request that the rate
// limit denies never spends quota and an exhausted key never spends a
// rate-limit slot. The manager remembers each key as the database last
// returned it ([WithKeyStateCache]) and plans the write from that, so in
// steady state a verification costs one round trip: the guarded write,
// which finds the key by its hash and returns it. Its guard holds only
// where the rules decide exactly what was planned (enabled, unexpired,
// the same settings, the counters in range), so a key changed meanwhile
// makes it miss, never admit wrongly; then, and for a key not remembered,
// the key is read first and the write planned on what was read. A lost
// race re-reads and decides again, a bounded number of times. A
// verification that only counts (a key with a rate limit and no quota, in
// its open window) on MySQL and MariaDB, which have no UPDATE …
// RETURNING, asks for the count alone ([core.DB.IncrementValue], where
// [core.DB.NativeValueIncrement]), its guard pinning every other column
// the write would return to the remembered copy: one statement rather
// than a read and a write. A change of any of those columns (a rename,
// new metadata) makes it miss, and the write returning the row decides;
// when that one hits, another program writes the key's pinned columns
// (Better Auth's own verification stamps lastRequest on every request),
// and the key's next 64 verifications take the returning write at once
// before a count is tried again.
//
// Beyond Better Auth's model, a key can carry named rate limits (such as
// "requests" and "tokens") that verifications spend with a cost per name
// ([LimitCost]), all or nothing with the key's quota, and can be rerolled
// ([Manager.Reroll]): a new plaintext for the same record, the old one
// working for a grace period. On a database these need the apikeyLimit and
// rerolledKey tables, which [core.DB.CreateTables] and sluicegen make;
// without them everything else works as before.
//
// Three storage modes exist:
//   - database ([New]): the database holds every key;
//   - cached ([New] with [WithCache]): a [driver.SecondaryStorage] caches keys
//     by hash, the database remains the source of truth and receives every
//     consuming write;
//   - storage only ([NewStorageOnly]): keys live in a secondary storage that
//     must implement [keystore.Claimer], which applies the verification decision
//     atomically inside the storage. A storage without it is refused.
//
// In cached mode a change through the manager takes effect at once: after
// [Manager.Update] or [Manager.Delete] returns without error, no
// verification, of any cost, on any server sharing the cache, sees the key
// as it was (see [WithCache]).
//
// Denials (unknown, disabled, expired, usage exceeded, rate limited) are a
// [Result] with a stable [Code] and an HTTP status, not an error, and a
// denial by a limit names it in Result.DeniedBy (the key's rate limit, by
// default 10 verifications per 24 hours; its quota; a named limit; its
// owner's); errors are for failures. Verification never deletes a key unless
// [WithDeleteExpiredOnVerify] asks it to remove expired ones.
//
// The package serves no protocol: package sluicehttp (module
// github.com/sluice-go/sluice/middleware/http) verifies the key of each
// HTTP request with [Manager.Verify] and this package's own
// [VerifyOption]s, checked once with [Manager.CheckVerify], and answers
// the Result as HTTP; sluice's gin, echo and gRPC middleware build on it.
//
// # Deadlines
//
// The context given to [Manager.Verify] bounds it, but a write already on
// its way to the database (or, in storage-only mode, a claim on its way to
// the storage) cannot be called back: when the context ends while the
// write is in flight, the write may still commit and spend quota and a
// rate-limit slot while Verify returns an error. Such an error wraps
// [ErrOutcomeUnknown] (and the context's error); every other error came
// before any write, so nothing was spent. Give verifications a deadline
// with room for one read and one write under load (and, without a native
// IncrementOne, for the transaction fallback's retries; see
// [driver.Incrementer]); a deadline cut close to the database's latency turns
// a few requests in a hundred into spent-but-failed ones. Do not refund or
// blindly retry an ErrOutcomeUnknown: the quota may already be spent.
//
// A [Manager] on a database checks its table with [Manager.CheckSchema]
// before its first verification or creation; call it at start-up to fail
// early.
//
// # Design: the walk of one verification
//
// A [Manager] validates, converts and reports; a store keeps the keys:
// dbStore for [New] (database*.go, with its remembered keys in
// keycache.go and cached mode's shared cache in cache.go) or storageStore
// for [NewStorageOnly] (storage*.go), behind the store interface of
// store.go. Each store owns its data and its caches; nothing forwards.
// A verification in database mode, file by file:
//
//  1. verify.go: [Manager.Verify] applies the [VerifyOption]s, hashes the
//     key ([keystore.Hash]) and, after manager.go's ready (the schema
//     check of database.go, once), calls the store's verify.
//  2. database_verify.go: dbStore.verify takes the key as remembered
//     (keycache.go) and tries its guarded write at once; otherwise, or on
//     a miss, it reads the key (database.go's read, through the shared
//     cache of cache.go in cached mode; key.go's fromRow), decides with
//     keystore.Decide (keystore/claim.go) and sends the guarded write that
//     consumeRequest builds, whose returned row it remembers.
//  3. verify.go: the answer, a [Result] built from the key as stored
//     (key.go's toKey).
//
// A verification that names limits goes from database_verify.go to
// database_limits.go; one in storage-only mode from verify.go to
// storage_verify.go, whose claim the storage applies as keystore.Apply
// does. Rerolling is database_reroll.go and storage_reroll.go, owner
// limits database_limits.go and storage_owner.go; reroll.go, owner.go,
// create.go and manage.go hold the Manager's side of each.
//
// The read path above crosses 7 files of this package (verify.go,
// manager.go, key.go, database.go, database_verify.go, keycache.go and
// cache.go, whose methods return at once on a manager without
// [WithCache]) and 2 of keystore (claim.go, key.go). The remembered path,
// one round trip, crosses 6 and 2, and with core (db.go, request.go),
// core/driver (types.go) and the SQL engine (increment.go, build.go,
// run.go, and database/sql's sqldb.go) 15 files from the call to the
// statement and back, measured as the rate limiter's walk is (see
// package ratelimit), and database_count.go besides for a verification
// that only counts; 25 before the files that split one concern were
// merged (keystore's limits.go and permissions.go; core's convert.go and
// naming.go; core/driver's table.go, convert.go and roundtrips.go; the
// engine's bind.go, stmtcache.go, dialect.go, errors.go, records.go).
// Before the stores were types the read path crossed 11 and 3 of the
// two packages (verify.go, manager.go, hash.go, backend.go, keycache.go,
// database.go, reroll.go, key.go, permissions.go, limits.go, result.go),
// the remembered path 9 and 3.
package apikey
