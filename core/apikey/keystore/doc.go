// Package keystore is what a storage implements to keep API keys for
// apikey's storage-only mode (apikey.NewStorageOnly), apart from what an
// application calls, as database/sql/driver is apart from database/sql.
//
// A storage is a [github.com/sluice-go/sluice/core/driver.SecondaryStorage] that also implements [Claimer]:
// it changes one stored [Key] atomically, deciding and applying a
// verification exactly as [Apply] does, so that concurrent verifications
// on several servers never both spend the last unit. [Rerollable] and
// [OwnerSharing] declare that its claims honour a request's hash and its
// owner's limits; [Indexer] lets the manager list keys, and [Creator]
// makes an owner's first record safely. core/memory's
// Storage implements all of them in process, and adapters/redis with one
// Lua script per claim; adaptertest.RunStorage checks an implementation
// against this contract.
//
// [Decide] is the first half of [Apply]: what a verification does to a key
// as read, without doing it. A storage that writes with a guard instead of
// in one atomic step, as apikey's database mode does, turns its [Plan]
// into the write.
package keystore
