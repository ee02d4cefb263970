package adaptertest

import (
	"fmt"
	"testing"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

const ruleClaimSharesOwnerLimits = "keystore.OwnerSharing: a claim naming limits with req.Owner answers and writes as keystore.Apply does with the owner's record (rule 5b): the key's limits, then the owner's, all spent or none; a denial on the owner's side sets OwnerLimit; a missing owner record holds no limits and is not created"

func storageClaimSharesOwnerLimits(t testing.TB, f *storageFixture) {
	ownerLimits := []*string{
		ptrString(`{"requests":{"max":2,"window":1000},"tokens":{"max":15,"window":5000}}`),
		ptrString(`{"tokens":{"max":"15"}}`), // malformed: holds nothing
		nil,
	}
	ownerCounts := []*string{
		nil,
		ptrString(fmt.Sprintf(`{"tokens":{"count":12,"start":%d}}`, claimBase)),
	}
	keyLimits := []*string{nil, ptrString(`{"tokens":{"max":10,"window":5000}}`)}
	spends := [][]keystore.LimitSpend{
		{{Name: "tokens", Cost: 4}},
		{{Name: "requests", Cost: 1}, {Name: "tokens", Cost: 2}},
		{{Name: "tokens", Cost: 11}},
		{{Name: "requests", Cost: 2}, {Name: "tokens", Cost: 0}},
		{{Name: "images", Cost: 1}},
	}
	codes := map[string]int{}
	n := 0
	for _, ol := range ownerLimits {
		for _, oc := range ownerCounts {
			for _, kl := range keyLimits {
				for _, stored := range []bool{true, false} {
					n++
					rec := claimKey(int64(300+n), ptr64(3))
					rec.Limits = kl
					// One hash tag for the key and its owner's record, as
					// storage-only managers make them.
					key, ownerKey := fmt.Sprintf("{shared-%d}key", n), fmt.Sprintf("{shared-%d}owner", n)
					storeRecord(t, f, key, rec, 0)
					want := rec
					var owner *keystore.Key
					if stored {
						owner = &keystore.Key{ReferenceID: "owner", Limits: ol, LimitCounts: oc}
						storeRecord(t, f, ownerKey, *owner, 0)
					}
					for j, sp := range spends {
						for _, cost := range []int64{1, 0} {
							req := keystore.Request{Now: claimBase + int64(700*j), Cost: cost, Limits: sp, Owner: ownerKey}
							res := claimAsApplyClaim(t, f, key, &want, owner, req, fmt.Sprintf("owner limits %s, counts %s, key limits %s, owner stored %v", show(ol), show(oc), show(kl), stored))
							codes[fmt.Sprintf("%s/%v", res.Code, res.OwnerLimit)]++
						}
					}
					if !stored {
						wantAbsent(t, f, ownerKey, "a claim must not create the owner's record")
					}
				}
			}
		}
	}
	for _, c := range []string{"/false", "RATE_LIMITED/true", "RATE_LIMITED/false", "USAGE_EXCEEDED/false"} {
		if codes[c] == 0 {
			t.Errorf("outcomes %v: the claims must reach %s (code/owner's limit)", codes, c)
		}
	}
}

const ruleClaimSpendsNamedLimits = "keystore.Claimer: a claim that names limits answers and writes as keystore.Apply does (rule 5b): each named limit the key holds opens a window or adds its cost to its counter in limitCounts, and one without room answers RATE_LIMITED naming it, spending nothing anywhere"

func storageClaimSpendsNamedLimits(t testing.TB, f *storageFixture) {
	limits := []*string{
		ptrString(`{"requests":{"max":3,"window":1000},"tokens":{"max":10,"window":5000}}`),
		nil,
		ptrString(`{"tokens":null}`),
		ptrString(`{"tokens":{"max":10}}`),
		ptrString(`{"tokens":{"max":"10","window":5000}}`), // malformed: holds nothing
		ptrString(`not JSON`),
	}
	counts := []*string{
		nil,
		ptrString(fmt.Sprintf(`{"tokens":{"count":8,"start":%d}}`, claimBase)),
		ptrString(fmt.Sprintf(`{"requests":{"count":3,"start":%d},"tokens":null}`, claimBase-500)),
		ptrString(`{"tokens":{"count":1.5}}`), // malformed: counts nothing, and is rewritten
	}
	spends := [][]keystore.LimitSpend{
		{{Name: "tokens", Cost: 4}},
		{{Name: "requests", Cost: 1}, {Name: "tokens", Cost: 2}},
		{{Name: "images", Cost: 1}, {Name: "tokens", Cost: 0}},
		{{Name: "tokens", Cost: 11}},
		{{Name: "tokens", Cost: 10}},
		{{Name: "requests", Cost: 3}, {Name: "tokens", Cost: 1}},
	}
	codes := map[keystore.Code]int{}
	n := 0
	for _, lim := range limits {
		for _, cnt := range counts {
			n++
			rec := claimKey(int64(100+n), ptr64(100))
			rec.Limits, rec.LimitCounts = lim, cnt
			key := fmt.Sprintf("limits:%d", rec.ID)
			storeRecord(t, f, key, rec, 0)
			want := rec
			for j, sp := range spends {
				for _, cost := range []int64{1, 0} {
					req := keystore.Request{Now: claimBase + int64(400*j), Cost: cost, Limits: sp}
					codes[claimAsApplyClaim(t, f, key, &want, nil, req, fmt.Sprintf("limits %s, counts %s", show(lim), show(cnt))).Code]++
				}
			}
		}
	}
	if codes[""] == 0 || codes[keystore.RateLimited] == 0 {
		t.Errorf("outcomes %v: the claims must reach both an allowed claim and RATE_LIMITED", codes)
	}
}
