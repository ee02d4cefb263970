package sluiceredis

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

var (
	//go:embed lua/record.lua
	recordLua string
	//go:embed lua/claim.lua
	claimLua string
	//go:embed lua/patch.lua
	patchLua string
)

// Both scripts start with record.lua, so that they decode and encode the
// record the same way; each touches one key, and a claim its owner's
// limits too.
var (
	claimScript = redis.NewScript(recordLua + claimLua)
	patchScript = redis.NewScript(recordLua + patchLua)
)

// Integer bounds of the scripts, which compute in doubles: an id below 2^53
// is exact; other values below 2^51 keep every sum the claim computes exact.
const (
	maxExact = 1 << 53
	maxCalc  = 1 << 51
)

// Claim verifies and consumes the API key stored at key in one Lua script,
// exactly as [keystore.Apply] does (the hash presented, the permissions
// it requires and its owner's limits at req.Owner too), and writes it back
// keeping its expiry when the claim was allowed with a positive cost. A
// missing key answers Found == false. Now and Cost must be in [0, 2^51).
// key and req.Owner must share a hash tag, as storage-only managers make
// them, so that a Cluster or a Ring keeps both on one node.
func (s *Storage) Claim(ctx context.Context, key string, req keystore.Request) (keystore.Result, error) {
	driver.AddRoundTrips(ctx, 1)
	switch {
	case req.Cost < 0 || req.Cost >= maxCalc:
		return keystore.Result{}, fmt.Errorf("sluiceredis: claim: %w: cost %d is outside [0, 2^51)", core.ErrInvalid, req.Cost)
	case req.Now < 0 || req.Now >= maxCalc:
		return keystore.Result{}, fmt.Errorf("sluiceredis: claim: %w: now %d is outside [0, 2^51) epoch ms", core.ErrInvalid, req.Now)
	}
	for _, l := range req.Limits {
		if l.Cost < 0 || l.Cost >= maxCalc {
			return keystore.Result{}, fmt.Errorf("sluiceredis: claim: %w: limit %q: cost %d is outside [0, 2^51)", core.ErrInvalid, l.Name, l.Cost)
		}
	}
	args := make([]any, 5, 6+2*(len(req.RequireAll)+len(req.RequireAny)+len(req.Limits)))
	args[0], args[1], args[2], args[3], args[4] = req.Now, req.Cost, req.Hash, len(req.RequireAll), len(req.RequireAny)
	for _, ps := range [2][]keystore.Permission{req.RequireAll, req.RequireAny} {
		for _, p := range ps {
			args = append(args, p.Resource, p.Action)
		}
	}
	args = append(args, len(req.Limits))
	for _, l := range req.Limits {
		args = append(args, l.Name, l.Cost)
	}
	keys := []string{s.prefix + key}
	if req.Owner != "" {
		owner := s.prefix + req.Owner
		if hashTag(owner) != hashTag(keys[0]) {
			// On a Cluster or a Ring the script would not see the owner's
			// record, or fail.
			return keystore.Result{}, fmt.Errorf("sluiceredis: claim: %w: the key %q and its owner's limits %q have different hash tags; is there a '{' in the storage prefix %q?", core.ErrInvalid, keys[0], owner, s.prefix)
		}
		keys = append(keys, owner)
	}
	res, err := claimScript.Run(ctx, s.client, keys, args...).Slice()
	if err != nil {
		return keystore.Result{}, fmt.Errorf("sluiceredis: claim: %w", err)
	}
	if len(res) < 4 {
		return keystore.Result{}, nil // {0}: no key stored
	}
	code, _ := res[1].(string)
	wait, _ := res[2].(int64)
	out := keystore.Result{Found: true, Code: keystore.Code(code), TryAgainIn: wait}
	if len(res) == 6 {
		out.Limit, _ = res[4].(string)
		owner, _ := res[5].(int64)
		out.OwnerLimit = owner == 1
	}
	if err := decodeRecord(res[3], &out.Key); err != nil {
		return keystore.Result{}, fmt.Errorf("sluiceredis: claim %q: %w", key, err)
	}
	return out, nil
}

// Patch sets fields of the API key stored at key in one Lua script,
// keeping its expiry and every other field. Each name must be a JSON field
// of [keystore.Key] and each value of that field's type: int64 (or
// int), bool, string, or nil for a nullable field. It returns the key
// after the change, and ok == false when no key is stored there.
func (s *Storage) Patch(ctx context.Context, key string, fields map[string]any) (keystore.Key, bool, error) {
	driver.AddRoundTrips(ctx, 1)
	if len(fields) == 0 {
		return keystore.Key{}, false, fmt.Errorf("sluiceredis: patch: %w: no fields", core.ErrInvalid)
	}
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
	}
	sort.Strings(names) // a fixed order keeps the script's writes deterministic
	args := make([]any, 0, 3*len(fields))
	for _, f := range names {
		kind, val, err := patchArg(f, fields[f])
		if err != nil {
			return keystore.Key{}, false, err
		}
		args = append(args, f, kind, val)
	}
	res, err := patchScript.Run(ctx, s.client, []string{s.prefix + key}, args...).Slice()
	if err != nil {
		return keystore.Key{}, false, fmt.Errorf("sluiceredis: patch: %w", err)
	}
	if len(res) != 2 {
		return keystore.Key{}, false, nil
	}
	var after keystore.Key
	if err := decodeRecord(res[1], &after); err != nil {
		return keystore.Key{}, false, fmt.Errorf("sluiceredis: patch %q: %w", key, err)
	}
	return after, true, nil
}

func decodeRecord(v any, k *keystore.Key) error {
	raw, ok := v.(string)
	if !ok {
		return fmt.Errorf("the script answered %T, not a record", v)
	}
	return json.Unmarshal([]byte(raw), k)
}

// fieldKind is the JSON type of each keystore.Key field, and whether it may be
// null.
type fieldKind struct {
	typ      byte // 'i' integer, 'b' boolean, 's' string
	nullable bool
}

var storedFields = map[string]fieldKind{
	"id": {'i', false}, "configId": {'s', false}, "name": {'s', true}, "start": {'s', true},
	"prefix": {'s', true}, "key": {'s', false}, "referenceId": {'s', false}, "enabled": {'b', false},
	"rateLimitEnabled": {'b', false}, "rateLimitTimeWindow": {'i', true}, "rateLimitMax": {'i', true},
	"requestCount": {'i', false}, "remaining": {'i', true}, "refillInterval": {'i', true},
	"refillAmount": {'i', true}, "lastRefillAt": {'i', true}, "lastRequest": {'i', true},
	"expiresAt": {'i', true}, "createdAt": {'i', false}, "updatedAt": {'i', false},
	"permissions": {'s', true}, "metadata": {'s', true}, "rerolled": {'s', true},
	"limits": {'s', true}, "limitCounts": {'s', true},
}

// patchArg checks one field of a Patch and returns its kind and value as
// script arguments.
func patchArg(name string, v any) (string, any, error) {
	k, ok := storedFields[name]
	if !ok {
		return "", nil, fmt.Errorf("sluiceredis: patch: %w: %q is not a field of keystore.Key", core.ErrInvalid, name)
	}
	bad := func(why string) (string, any, error) {
		return "", nil, fmt.Errorf("sluiceredis: patch: %w: field %q: %s", core.ErrInvalid, name, why)
	}
	if i, ok := v.(int); ok {
		v = int64(i)
	}
	switch v := v.(type) {
	case nil:
		if !k.nullable {
			return bad("cannot be null")
		}
		return "n", "", nil
	case int64:
		if k.typ != 'i' {
			return bad(fmt.Sprintf("%d is not %s", v, kindName(k.typ)))
		}
		bound, exp := int64(maxCalc), 51
		if name == "id" {
			bound, exp = maxExact, 53
		}
		if v >= bound || v <= -bound {
			return bad(fmt.Sprintf("%d is beyond what the storage's scripts compute exactly (±2^%d)", v, exp))
		}
		return "i", v, nil
	case bool:
		if k.typ != 'b' {
			return bad(fmt.Sprintf("%v is not %s", v, kindName(k.typ)))
		}
		if v {
			return "b", "1", nil
		}
		return "b", "0", nil
	case string:
		if k.typ != 's' {
			return bad(fmt.Sprintf("%q is not %s", v, kindName(k.typ)))
		}
		return "s", v, nil
	default:
		return bad(fmt.Sprintf("a %T is not an int64, bool, string or nil", v))
	}
}

func kindName(t byte) string {
	switch t {
	case 'i':
		return "an integer"
	case 'b':
		return "a boolean"
	}
	return "a string"
}

// ClaimChecksHash declares that Claim applies rule 0 of
// [keystore.Apply], so that storage-only managers can reroll keys.
func (s *Storage) ClaimChecksHash() {}

// ClaimSharesOwnerLimits declares that Claim applies req.Owner, so that
// storage-only managers can share limits among an owner's keys.
func (s *Storage) ClaimSharesOwnerLimits() {}

// hashTag is the part of key that Redis Cluster hashes to pick a slot,
// and go-redis's Ring a shard: the text between the first '{' and the
// first '}' after it, when not empty; else the whole key.
func hashTag(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key[open+1 : open+1+end]
		}
	}
	return key
}

var (
	_ keystore.Claimer      = (*Storage)(nil)
	_ keystore.Rerollable   = (*Storage)(nil)
	_ keystore.OwnerSharing = (*Storage)(nil)
	_ keystore.Indexer      = (*Storage)(nil)
	_ keystore.Creator      = (*Storage)(nil)
)
