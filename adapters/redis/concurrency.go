package sluiceredis

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/concurrency"
)

//go:embed lua/slot_acquire.lua
var slotAcquireLua string

//go:embed lua/slot_update.lua
var slotUpdateLua string

// The slot scripts touch one key each, so they run on Redis Cluster as is.
var (
	slotAcquireScript = redis.NewScript(slotAcquireLua)
	slotUpdateScript  = redis.NewScript(slotUpdateLua)
)

// slotsSuffix ends the Redis key of a concurrency key's slots: prefix +
// key + "#slots".
const slotsSuffix = "#slots"

var _ concurrency.Store = (*Storage)(nil)

// AcquireSlot leases a free slot of key's n in one Lua script, for
// concurrency.New(storage): see concurrency.Store. A key's slots are one
// hash, at the prefix + key + "#slots", expiring when its last lease ends
// (counted by Redis from the call, so a skew between the clocks moves
// nothing). now and expires must be in [0, 2^51).
func (s *Storage) AcquireSlot(ctx context.Context, key string, n int, now, expires int64) (concurrency.Lease, bool, error) {
	if err := checkLease(n, now, expires); err != nil {
		return concurrency.Lease{}, false, fmt.Errorf("sluiceredis: acquire slot: %w", err)
	}
	seed := 1 + rand.Int64N(1<<30)
	res, err := slotAcquireScript.Run(ctx, s.client, []string{s.prefix + key + slotsSuffix}, n, now, expires, seed).Int64Slice()
	if err != nil {
		return concurrency.Lease{}, false, fmt.Errorf("sluiceredis: acquire slot: %w", err)
	}
	if len(res) != 4 {
		return concurrency.Lease{}, false, fmt.Errorf("sluiceredis: acquire slot: the script answered %d values, not 4", len(res))
	}
	if res[0] != 1 {
		return concurrency.Lease{Expires: res[3]}, false, nil
	}
	return concurrency.Lease{Slot: int(res[1]), Generation: res[2], Expires: res[3]}, true, nil
}

// ReleaseSlot frees l's slot in one Lua script when l still holds it.
func (s *Storage) ReleaseSlot(ctx context.Context, key string, l concurrency.Lease, now int64) (bool, error) {
	return s.updateSlot(ctx, "release slot", key, l, now, 0)
}

// RenewSlot moves the end of l's lease to expires in one Lua script when l
// still holds it.
func (s *Storage) RenewSlot(ctx context.Context, key string, l concurrency.Lease, now, expires int64) (bool, error) {
	if err := checkLease(1, now, expires); err != nil {
		return false, fmt.Errorf("sluiceredis: renew slot: %w", err)
	}
	return s.updateSlot(ctx, "renew slot", key, l, now, expires)
}

func (s *Storage) updateSlot(ctx context.Context, op, key string, l concurrency.Lease, now, expires int64) (bool, error) {
	if now < 0 || now >= maxCalc {
		return false, fmt.Errorf("sluiceredis: %s: %w: now %d is outside [0, 2^51)", op, core.ErrInvalid, now)
	}
	if l.Slot < 0 || l.Generation < 1 {
		return false, nil // not a lease this storage gave
	}
	res, err := slotUpdateScript.Run(ctx, s.client, []string{s.prefix + key + slotsSuffix},
		l.Slot, strconv.FormatInt(l.Generation, 10), now, expires).Int64()
	if err != nil {
		return false, fmt.Errorf("sluiceredis: %s: %w", op, err)
	}
	return res == 1, nil
}

func checkLease(n int, now, expires int64) error {
	switch {
	case n < 1:
		return fmt.Errorf("%w: n = %d, want at least 1", core.ErrInvalid, n)
	case now < 0 || expires >= maxCalc || expires <= now:
		return fmt.Errorf("%w: lease from %d to %d is not within [0, 2^51) and forward", core.ErrInvalid, now, expires)
	}
	return nil
}
