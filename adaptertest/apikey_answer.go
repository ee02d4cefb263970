package adaptertest

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
)

const ruleAnswerIsStoredKey = "a valid verification answers with the key as stored after its write, whatever changed since the manager last saw the key: " +
	"name, metadata, permissions and expiry changed by another manager, and a row deleted and made again under the same hash (another id), " +
	"for a key with a quota and for one with a rate limit alone (whose verification only counts)"

// apiKeyAnswerIsStoredKey holds a verification's answer to the stored row:
// a manager remembers each key it verified and plans the next write from
// that copy, so a write that returned too little, or a copy trusted for
// what the write's guard does not pin, would answer with stale fields.
// A key with a quota decrements it; one with a rate limit alone only
// counts, a write that may answer with the count alone (the rest pinned).
func apiKeyAnswerIsStoredKey(ctx context.Context, f *Fixture) error {
	quota := int64(100)
	if err := answerIsStoredKey(ctx, f, &quota); err != nil {
		return fmt.Errorf("a key with a quota: %w", err)
	}
	if err := answerIsStoredKey(ctx, f, nil); err != nil {
		return fmt.Errorf("a key with a rate limit alone: %w", err)
	}
	return nil
}

// answerIsStoredKey is apiKeyAnswerIsStoredKey on a key whose quota
// (Remaining) is quota, none when nil.
func answerIsStoredKey(ctx context.Context, f *Fixture, quota *int64) error {
	clock := NewClock(time.Now().Truncate(time.Millisecond))
	verifier, err := apikey.New(f.DB, apikey.WithClock(clock.Now))
	if err != nil {
		return err
	}
	admin, err := apikey.New(f.DB, apikey.WithClock(clock.Now))
	if err != nil {
		return err
	}
	plain, k, err := admin.Create(ctx, apikey.CreateParams{ReferenceID: "answer", Name: "first", Remaining: quota, ExpiresIn: 24 * time.Hour,
		RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Hour, Max: 1000}, Metadata: map[string]any{"v": "1"}})
	if err != nil {
		return fmt.Errorf("Create: %w", err)
	}
	same := func(step string) error {
		clock.Advance(time.Millisecond)
		res, err := verifier.Verify(ctx, plain)
		if err != nil || !res.Valid {
			return fmt.Errorf("%s: Verify: %v %v", step, res.Code, err)
		}
		stored, err := admin.Get(ctx, res.Key.ID)
		if err != nil {
			return fmt.Errorf("%s: Get: %w", step, err)
		}
		got, want := *res.Key, *stored
		got.Limits, want.Limits = nil, nil
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("%s: the answer\n%+v\nis not the stored key\n%+v", step, got, want)
		}
		return nil
	}
	if err := same("first verification"); err != nil {
		return err
	}
	if err := same("second verification"); err != nil { // planned from the remembered copy
		return err
	}
	name, expires := "renamed", clock.Now().Add(48*time.Hour)
	if _, err := admin.Update(ctx, k.ID, apikey.UpdateParams{Name: &name, ExpiresAt: &expires,
		Metadata: map[string]any{"v": "2"}, Permissions: map[string][]string{"files": {"read"}}}); err != nil {
		return fmt.Errorf("Update: %w", err)
	}
	if err := same("after another manager's update"); err != nil {
		return err
	}
	// One field at a time: a guard that pinned all but one of them would
	// miss a change of that one alone.
	for _, u := range []struct {
		step string
		p    apikey.UpdateParams
	}{
		{"after a rename alone", apikey.UpdateParams{Name: ptrString("renamed again")}},
		{"after new metadata alone", apikey.UpdateParams{Metadata: map[string]any{"v": "3"}}},
		{"after new permissions alone", apikey.UpdateParams{Permissions: map[string][]string{"files": {"write"}}}},
	} {
		// A verifier of its own that has seen the key once: the
		// verification after the change is planned from that copy, and
		// no earlier miss makes it skip the write planned from it.
		if verifier, err = apikey.New(f.DB, apikey.WithClock(clock.Now)); err != nil {
			return err
		}
		if err := same(u.step + ": a new verifier's first verification"); err != nil {
			return err
		}
		if _, err := admin.Update(ctx, k.ID, u.p); err != nil {
			return fmt.Errorf("%s: Update: %w", u.step, err)
		}
		if err := same(u.step); err != nil {
			return err
		}
	}
	// The row goes and comes back under the same hash, with another id.
	row, found, err := f.DB.FindOne(ctx, core.ModelAPIKey, core.Eq("id", k.ID))
	if err != nil || !found {
		return fmt.Errorf("reading the key's row: %v %v", found, err)
	}
	if _, err := f.DB.Delete(ctx, core.ModelAPIKey, core.Eq("id", k.ID)); err != nil {
		return fmt.Errorf("deleting the key's row: %w", err)
	}
	again := map[string]any{}
	for field, v := range row {
		if field != "id" {
			again[field] = v
		}
	}
	again["name"] = "made again"
	made, err := f.DB.Create(ctx, core.ModelAPIKey, again)
	if err != nil {
		return fmt.Errorf("making the row again: %w", err)
	}
	if made.Int("id") == k.ID {
		return fmt.Errorf("the row made again has the old id %d", k.ID)
	}
	return same("after the row was made again")
}
