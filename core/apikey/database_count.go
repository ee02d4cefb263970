package apikey

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// maxPinnedText bounds the text a counting write pins (see consumeCount):
// a key whose name, metadata and other text add up to more takes the
// write that returns them, rather than send them with every verification.
const maxPinnedText = 1024

// counts reports whether the verification planned as p of s is a count in
// the key's open window and nothing else (requestCount += cost, updatedAt
// = now) on a key without a quota, which consumeCount writes in one statement where the adapter
// answers one column cheaply.
func (d *dbStore) counts(s *keystore.Key, p keystore.Plan) bool {
	if !p.Increment || p.Reset || p.Refill || p.Decrement || s.LastRequest == nil || s.Remaining != nil || !d.db.NativeValueIncrement() {
		return false
	}
	n := len(s.ConfigID) + len(s.ReferenceID)
	for _, t := range []*string{s.Name, s.Start, s.Prefix, s.Permissions, s.Metadata} {
		if t != nil {
			n += len(*t)
		}
	}
	return n <= maxPinnedText
}

// consumeCount is consume for a count (see counts): w, consumeRequest's
// write, goes to core.DB.IncrementValue, answering requestCount alone (on
// MySQL and MariaDB, which have no UPDATE … RETURNING, one statement
// instead of a read and a guarded write), with a guard that also pins
// every column of writeReturns the write does not change to s's value. A
// hit therefore proves the row was s but for requestCount, and the key
// after the write is s with the count returned and updatedAt = now; a
// change of any of them since s (a rename, new metadata) makes it miss,
// and consume sends the write returning the row.
func (d *dbStore) consumeCount(ctx context.Context, s *keystore.Key, w core.IncrementRequest, need *required, now time.Time) (*keystore.Key, error) {
	w.Where = pinUnwritten(w.Where, s, need)
	n, ok, err := d.db.IncrementValue(ctx, w)
	if err != nil || !ok {
		return nil, err
	}
	after := *s
	after.RequestCount = n
	after.UpdatedAt = now.UnixMilli()
	return &after, nil
}

// pinUnwritten appends to where, consumeRequest's guard for a count of s
// under need, the guards that hold each column of writeReturns but
// requestCount and updatedAt equal to s's, where that guard does not
// already: texts by equality or IS NULL, times to s's millisecond (the
// key's precision: [t, t+1ms)) or IS NULL. (It holds remaining IS NULL,
// which counts requires; an expiry IS NULL; the permissions when need
// names some.)
func pinUnwritten(where []core.Where, s *keystore.Key, need *required) []core.Where {
	where = append(where, core.Eq("configId", s.ConfigID), core.Eq("referenceId", s.ReferenceID),
		textOrNull("name", s.Name), textOrNull("start", s.Start), textOrNull("prefix", s.Prefix),
		textOrNull("metadata", s.Metadata))
	if need.none() {
		where = append(where, textOrNull("permissions", s.Permissions))
	}
	where = msOrNull(msOrNull(where, "lastRequest", s.LastRequest), "lastRefillAt", s.LastRefillAt)
	if s.ExpiresAt != nil {
		where = msOrNull(where, "expiresAt", s.ExpiresAt)
	}
	return where
}

// textOrNull compares a text column with an optional value, NULL by IS NULL.
func textOrNull(field string, v *string) core.Where {
	if v == nil {
		return core.IsNull(field)
	}
	return core.Eq(field, *v)
}

// msOrNull appends the guard holding a time column to the millisecond ms
// (epoch ms), or to NULL.
func msOrNull(where []core.Where, field string, ms *int64) []core.Where {
	if ms == nil {
		return append(where, core.IsNull(field))
	}
	t := time.UnixMilli(*ms).UTC()
	return append(where, core.Gte(field, t), core.Lt(field, t.Add(time.Millisecond)))
}
