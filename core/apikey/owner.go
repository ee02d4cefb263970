package apikey

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
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
	return nil
}

// setOwnerLimits makes cfg (Limits text, nil for none) the owner's limits:
// a patch of the limits alone keeps the counters claims write; with no
// record yet, one is made, only where none is (keystore.Creator), so that
// of two first calls the later patches the record the earlier made rather
// than replacing it and the counters claims wrote to it meanwhile. A
// storage without Creator stores the record outright.
func (st *storeOnly) setOwnerLimits(ctx context.Context, ref string, cfg *string) error {
	if !st.owners {
		return fmt.Errorf("apikey: SetOwnerLimits: %w: storage %T does not implement keystore.OwnerSharing", core.ErrUnsupported, st.c)
	}
	key := st.ownerKey(Hash(ref))
	if cfg == nil {
		return st.s.Delete(ctx, key)
	}
	v, err := json.Marshal(&keystore.Key{ReferenceID: ref, Limits: cfg})
	if err != nil {
		return err
	}
	// A record deleted between the patch and the create makes both miss;
	// so does one created between them, which the next patch finds.
	for attempt := 0; attempt < maxOwnerAttempts; attempt++ {
		if _, ok, err := st.c.Patch(ctx, key, map[string]any{"limits": *cfg}); err != nil || ok {
			return err
		}
		if st.creator == nil {
			return st.s.Set(ctx, key, string(v), 0)
		}
		if created, err := st.creator.Create(ctx, key, string(v)); err != nil || created {
			return err
		}
	}
	return fmt.Errorf("apikey: SetOwnerLimits: %w: the owner's record was created and deleted under it %d times", core.ErrContention, maxOwnerAttempts)
}

// maxOwnerAttempts bounds setOwnerLimits' rounds of patch and create.
const maxOwnerAttempts = 10

// ownerLimits reads the owner's limits and their counters.
func (st *storeOnly) ownerLimits(ctx context.Context, ref string) (map[string]LimitUsage, error) {
	if !st.owners {
		return nil, nil // none can be set
	}
	s, err := st.record(ctx, st.ownerKey(Hash(ref)))
	if err != nil || s == nil {
		return nil, err
	}
	return usage(s), nil
}

func (d dbKeys) setOwnerLimits(ctx context.Context, ref string, cfg *string) error {
	m := d.m
	if err := m.ready(ctx, "SetOwnerLimits"); err != nil {
		return err
	}
	if err := m.limitsUsable("SetOwnerLimits"); err != nil {
		return err
	}
	want := (&keystore.Key{Limits: cfg}).LimitConfigs()
	return m.db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		return dbReplaceLimits(ctx, tx, core.Eq("owner", ref), func(name string) map[string]any {
			return map[string]any{"key": ownerRowKey(Hash(ref), name), "keyId": int64(0), "owner": ref}
		}, want)
	})
}

func (d dbKeys) ownerLimits(ctx context.Context, ref string) (map[string]LimitUsage, error) {
	m := d.m
	if err := m.ready(ctx, "OwnerLimits"); err != nil || m.schema.noLimits.Load() != nil {
		return nil, err
	}
	rows, err := m.db.FindMany(ctx, core.ModelAPIKeyLimit, []core.Where{core.Eq("owner", ref)}, nil)
	if err != nil {
		return nil, err
	}
	cfg, counts := map[string]keystore.LimitConfig{}, map[string]keystore.LimitCount{}
	for _, r := range rows {
		name := r.Text("name")
		cfg[name], counts[name] = rowLimit(r)
	}
	var s keystore.Key
	s.SetLimitConfigs(cfg)
	s.SetLimitCounters(counts)
	return usage(&s), nil
}
