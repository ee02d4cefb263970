package apikey

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
)

// SetOwnerLimits makes limits the named limits of an owner (the
// ReferenceID of their keys), which all the owner's keys share: a
// verification that names a limit with [LimitCost] spends the key's own
// limit of that name and the owner's together, with the key's quota, or
// nothing at all. So an owner's quota over a month, say, is a named limit
// with a window of a month. limits replaces the owner's limits (empty
// removes them); a limit that stays keeps its counter, under its new max
// and window. Only in database mode, with the apikeyLimit table
// ([core.APIKeyLimitModel]); elsewhere it fails with [core.ErrUnsupported]
// or [core.ErrSchema].
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
	if m.db == nil {
		return fmt.Errorf("apikey: SetOwnerLimits: %w: storage-only mode has no owner limits", core.ErrUnsupported)
	}
	if err := m.ready(ctx, "SetOwnerLimits"); err != nil {
		return err
	}
	if err := m.limitsUsable("SetOwnerLimits"); err != nil {
		return err
	}
	want := decodeMap[limitConfig](configText(limits))
	err := m.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		return dbReplaceLimits(ctx, tx, core.Eq("owner", referenceID), func(name string) map[string]any {
			return map[string]any{"key": ownerRowKey(Hash(referenceID), name), "keyId": int64(0), "owner": referenceID}
		}, want)
	})
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
	if m.db == nil {
		return nil, nil
	}
	if err := m.ready(ctx, "OwnerLimits"); err != nil || m.schema.noLimits.Load() != nil {
		return nil, err
	}
	rows, err := m.db.FindMany(ctx, core.ModelAPIKeyLimit, []core.Where{core.Eq("owner", referenceID)}, nil)
	if err != nil {
		return nil, err
	}
	cfg, counts := map[string]limitConfig{}, map[string]limitCount{}
	for _, r := range rows {
		name := r.Text("name")
		cfg[name], counts[name] = rowLimit(r)
	}
	s := StoredKey{Limits: encodeMap(cfg), LimitCounts: encodeMap(counts)}
	return s.usage(), nil
}

func checkOwner(referenceID string) error {
	switch {
	case referenceID == "":
		return invalidf("the owner (ReferenceID) is required")
	case len(referenceID) > 255:
		return invalidf("the owner (ReferenceID) is longer than 255 bytes")
	}
	return nil
}
