package sluiceredis

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

//go:embed lua/gcra.lua
var gcraLua string

// gcraScript touches one key, so it runs on Redis Cluster as is.
var gcraScript = newScript(gcraLua)

// AdvanceTAT advances the theoretical arrival time at key in one Lua
// script (GET, and SET with a millisecond expiry when it advances): the
// rate limiter's GCRA mode (see driver.TATAdvancer). The key expires when
// the caller's clock reaches the stored time, counted by Redis from the
// call, so a skew between the two clocks moves nothing. now, increment
// and limit must be in [0, 2^51): the script computes in doubles.
func (s *Storage) AdvanceTAT(ctx context.Context, key string, now, increment, limit int64) (int64, bool, error) {
	for _, a := range []struct {
		name string
		v    int64
	}{{"now", now}, {"increment", increment}, {"limit", limit}} {
		if a.v < 0 || a.v >= maxCalc {
			return 0, false, fmt.Errorf("sluiceredis: advance tat: %w: %s %d is outside [0, 2^51)", core.ErrInvalid, a.name, a.v)
		}
	}
	// One integer: the tat when it advanced, -tat-1 when refused (a tat
	// is never negative), read without an allocation.
	res, err := s.evalInt(ctx, gcraScript, s.prefix+key, now, increment, limit)
	if err != nil {
		return 0, false, fmt.Errorf("sluiceredis: advance tat: %w", err)
	}
	if res < 0 {
		return -res - 1, false, nil
	}
	return res, true, nil
}

var _ driver.TATAdvancer = (*Storage)(nil)
