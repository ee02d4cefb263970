package server

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"

	"github.com/sluice-go/sluice/core/apikey"
)

// usage counts each key's verifications from the API-key events, the way
// a program feeds usage analytics from apikey.WithObserver. It counts what
// this process verified since it started.
type usage struct {
	mu    sync.Mutex
	byKey map[int64]*KeyUsage
}

// KeyUsage is one key's line in GET /usage.
type KeyUsage struct {
	ID     int64            `json:"id"`
	Valid  int64            `json:"valid"`
	Denied map[string]int64 `json:"denied,omitempty"` // by code
}

func newUsage() *usage { return &usage{byKey: map[int64]*KeyUsage{}} }

// observe is an apikey observer.
func (u *usage) observe(_ context.Context, e apikey.Event) {
	if e.KeyID == 0 || e.Err != nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	switch e.Kind {
	case apikey.Deleted:
		delete(u.byKey, e.KeyID)
		return
	case apikey.Created:
		u.byKey[e.KeyID] = &KeyUsage{ID: e.KeyID}
		return
	case apikey.Verified:
	default:
		return
	}
	k := u.byKey[e.KeyID]
	if k == nil {
		k = &KeyUsage{ID: e.KeyID}
		u.byKey[e.KeyID] = k
	}
	if e.Result.Valid {
		k.Valid++
		return
	}
	if k.Denied == nil {
		k.Denied = map[string]int64{}
	}
	k.Denied[string(e.Result.Code)]++
}

// serve answers GET /usage: every key's counts, by id.
func (u *usage) serve(w http.ResponseWriter, _ *http.Request) {
	u.mu.Lock()
	list := make([]KeyUsage, 0, len(u.byKey))
	for _, k := range u.byKey {
		c := *k
		c.Denied = make(map[string]int64, len(k.Denied))
		for code, n := range k.Denied {
			c.Denied[code] = n
		}
		list = append(list, c)
	}
	u.mu.Unlock()
	slices.SortFunc(list, func(a, b KeyUsage) int { return cmp.Compare(a.ID, b.ID) })
	writeJSON(w, http.StatusOK, map[string]any{"keys": list})
}
