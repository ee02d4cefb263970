package keystore

import "context"

// Claimer is the capability that storage-only mode requires of a
// storage: changing one stored key atomically inside the storage, so that
// concurrent verifications on several servers can never both spend the
// last unit. The value at a storage key is the JSON encoding of a [Key].
type Claimer interface {
	// Claim reads the stored key at key and, in one atomic step, decides
	// and applies the verification exactly as [Apply] does, writing the
	// key back (keeping its expiry) when it changed. A missing key answers
	// Found == false.
	Claim(ctx context.Context, key string, req Request) (Result, error)
	// Patch sets fields of the stored key at key in one atomic step: each
	// map key is a JSON field name of [Key] and each value an int64, bool,
	// string or nil (JSON null); other fields, counters included, keep
	// their current values. It returns the key after the change, and
	// ok == false when no key is stored there.
	Patch(ctx context.Context, key string, fields map[string]any) (after Key, ok bool, err error)
}

// Rerollable is the capability storage-only mode needs of a [Claimer] to
// reroll keys (apikey's Manager.Reroll): a Claim that honours
// [Request.Hash] (rule 0 of [Apply]). Its method only declares it. Without
// it Reroll fails with core.ErrUnsupported: a Claim that ignored the hash
// would let a rerolled key's old plaintext work for ever.
type Rerollable interface {
	Claimer
	// ClaimChecksHash declares that Claim applies rule 0.
	ClaimChecksHash()
}

// OwnerSharing is the capability storage-only mode needs of a [Claimer]
// for owner limits (apikey's Manager.SetOwnerLimits): a Claim that honours
// [Request.Owner], reading and writing the owner's record in the same
// atomic step as the key (rule 5b of [Apply]). Its method only declares
// it. Without it SetOwnerLimits fails with core.ErrUnsupported.
//
// The two storage keys of one claim share a {hash tag}, so that a Redis
// Cluster can run the claim as one script on one node.
type OwnerSharing interface {
	Claimer
	// ClaimSharesOwnerLimits declares that Claim applies req.Owner.
	ClaimSharesOwnerLimits()
}

// Indexer is an optional storage capability: unordered sets of strings.
// Storage-only mode uses it to list keys by owner and to find expired
// keys; without it apikey's Manager.List and Manager.DeleteExpired fail
// with core.ErrUnsupported in that mode.
type Indexer interface {
	// AddToSet adds member to the set, creating it; adding twice is a no-op.
	AddToSet(ctx context.Context, set, member string) error
	// RemoveFromSet removes member; a missing member is not an error.
	RemoveFromSet(ctx context.Context, set, member string) error
	// SetMembers returns the members in any order.
	SetMembers(ctx context.Context, set string) ([]string, error)
}

// Creator is an optional capability that storage-only mode uses to make an
// owner's first record (apikey's Manager.SetOwnerLimits): storing a value
// only where none is stored, in one atomic step, as Redis's SET NX does.
// Without it two first SetOwnerLimits calls at once can both store the
// record, the later one dropping what claims spent from the earlier in
// between.
type Creator interface {
	// Create stores value at key, with no expiry, when no live value is
	// stored there, and reports whether it did; it never changes a value
	// already stored.
	Create(ctx context.Context, key, value string) (created bool, err error)
}
