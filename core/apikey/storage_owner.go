package apikey

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// ownerOf is the storage key of the owner's limits that a claim on the
// key at loc reads with it; "" when the location has no owner's tag.
func (st *storageStore) ownerOf(loc string) string {
	if !st.owners || len(loc) == 0 || loc[0] != '{' {
		return ""
	}
	end := strings.IndexByte(loc, '}')
	if end < 2 {
		return ""
	}
	return st.ownerKey(loc[1:end])
}

// checkPrefixTag refuses a storage prefix that would split the keys of
// one owner over Redis Cluster slots: a '{' in it must open a non-empty
// hash tag that it closes (which then holds every key), since Redis hashes
// the first {tag} of a key.
func checkPrefixTag(prefix string) error {
	open := strings.IndexByte(prefix, '{')
	if open < 0 {
		return nil
	}
	if end := strings.IndexByte(prefix[open+1:], '}'); end < 1 {
		return invalidf("WithStoragePrefix(%q): its '{' must open a non-empty {hash tag} that the prefix closes, or an owner's keys and limits would not share a Redis Cluster slot", prefix)
	}
	return nil
}

// setOwnerLimits makes cfg (Limits text, nil for none) the owner's limits:
// a patch of the limits alone keeps the counters claims write; with no
// record yet, one is made, only where none is (keystore.Creator), so that
// of two first calls the later patches the record the earlier made rather
// than replacing it and the counters claims wrote to it meanwhile. A
// storage without Creator stores the record outright.
func (st *storageStore) setOwnerLimits(ctx context.Context, ref string, cfg *string) error {
	if !st.owners {
		return fmt.Errorf("apikey: SetOwnerLimits: %w: storage %T does not implement keystore.OwnerSharing", core.ErrUnsupported, st.c)
	}
	key := st.ownerKey(keystore.Hash(ref))
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
func (st *storageStore) ownerLimits(ctx context.Context, ref string) (map[string]LimitUsage, error) {
	if !st.owners {
		return nil, nil // none can be set
	}
	s, err := st.record(ctx, st.ownerKey(keystore.Hash(ref)))
	if err != nil || s == nil {
		return nil, err
	}
	return usage(s), nil
}
