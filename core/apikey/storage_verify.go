package apikey

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// verify claims the key at its location: the one remembered for hash, or
// the one its pointer leads to, or hash itself.
func (st *storageStore) verify(ctx context.Context, hash string, cost int64, req *required, spend []keystore.LimitSpend) (Result, error) {
	now := st.now().UnixMilli()
	if err := ctx.Err(); err != nil {
		return Result{}, err // before the claim: nothing spent
	}
	claim := req.claim(now, cost, spend)
	claim.Hash = hash
	loc, known := st.locs.get(hash)
	var res keystore.Result
	var err error
	switch {
	case known:
		res, err = st.claim(ctx, loc, claim)
		if err == nil && !res.Found {
			st.locs.drop(hash) // deleted, or an old hash whose grace is over
		}
	case st.owners:
		// Most keys are at a location of their owner's: the pointer first.
		if loc, err = st.pointed(ctx, hash); err == nil {
			res, err = st.claim(ctx, loc, claim)
		}
	default:
		loc = hash
		res, err = st.claim(ctx, loc, claim)
		if err == nil && !res.Found && st.rerolls {
			// A hash the key was rerolled to, or an old one whose grace
			// is over (the claim's rule 0 then refuses it).
			var to string
			if to, err = st.pointed(ctx, hash); err == nil && to != hash {
				loc = to
				res, err = st.claim(ctx, loc, claim)
			}
		}
	}
	if err != nil {
		return Result{}, err
	}
	if !res.Found {
		return invalid(), nil
	}
	if !known {
		st.locs.put(hash, loc)
	}
	k, err := toKey(&res.Key)
	if err != nil {
		return Result{}, err
	}
	k.Limits = named(k.Limits, spend)
	if res.Code == keystore.Expired && st.dropExpired {
		if err := st.remove(ctx, loc, &res.Key); err != nil {
			return Result{}, err
		}
	}
	if res.Code != "" {
		return denied(res.Code, res.TryAgainIn, res.Limit, res.OwnerLimit, k), nil
	}
	return allowed(k), nil
}

// pointed is the location the pointer of hash leads to; hash itself when
// there is none.
func (st *storageStore) pointed(ctx context.Context, hash string) (string, error) {
	to, ok, err := st.s.Get(ctx, st.toKey(hash))
	if err != nil || !ok {
		return hash, err
	}
	return to, nil
}

// claim claims the key stored at location loc.
func (st *storageStore) claim(ctx context.Context, loc string, claim keystore.Request) (keystore.Result, error) {
	if len(claim.Limits) > 0 {
		claim.Owner = st.ownerOf(loc)
	}
	res, err := st.c.Claim(ctx, st.recKey(loc), claim)
	if err != nil {
		if err := afterWrite(ctx, "claim", err); errors.Is(err, ErrOutcomeUnknown) {
			return keystore.Result{}, err
		}
		return keystore.Result{}, fmt.Errorf("apikey: claim: %w", err)
	}
	return res, nil
}
