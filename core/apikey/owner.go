package apikey

import (
	"context"
	"time"
)

// SetOwnerLimits makes limits the named limits of an owner (the
// ReferenceID of their keys), which all the owner's keys share: a
// verification that names a limit with [LimitCost] spends the key's own
// limit of that name and the owner's together, with the key's quota, or
// nothing at all. So an owner's quota over a month, say, is a named limit
// with a window of a month. limits replaces the owner's limits (empty
// removes them); a limit that stays keeps its counter, under its new max
// and window.
//
// In database mode it needs the apikeyLimit table ([core.APIKeyLimitModel]),
// or fails with [core.ErrSchema]. In storage-only mode it needs a storage
// that implements [keystore.OwnerSharing], or fails with [core.ErrUnsupported], and
// the owner's limits apply to the keys created by such a manager: each is
// stored with its owner's limits, under one {hash tag}. There an owner's
// first call makes the owner's record only where none is when the storage
// implements [keystore.Creator] (core/memory's and Redis's do), so that two
// first calls at once cannot drop what claims spent between them.
func (m *Manager) SetOwnerLimits(ctx context.Context, referenceID string, limits map[string]NamedLimit) error {
	start := time.Now()
	if err := m.initialised("SetOwnerLimits"); err != nil {
		return err
	}
	if err := checkOwner(referenceID); err != nil {
		return err
	}
	if err := checkLimits(limits); err != nil {
		return err
	}
	err := m.store.setOwnerLimits(ctx, referenceID, configText(limits))
	if err == nil {
		m.changed(ctx, start, Event{Kind: OwnerLimitsSet, Owner: referenceID})
	}
	return err
}

// OwnerLimits returns the named limits of an owner, with their counters.
func (m *Manager) OwnerLimits(ctx context.Context, referenceID string) (map[string]LimitUsage, error) {
	if err := m.initialised("OwnerLimits"); err != nil {
		return nil, err
	}
	if err := checkOwner(referenceID); err != nil {
		return nil, err
	}
	return m.store.ownerLimits(ctx, referenceID)
}

func checkOwner(referenceID string) error {
	switch {
	case referenceID == "":
		return invalidf("the owner (ReferenceID) is required")
	case len(referenceID) > 255:
		return invalidf("the owner (ReferenceID) is longer than 255 bytes")
	}
	return checkText("the owner (ReferenceID)", referenceID)
}
