package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluice-go/sluice/core"
)

// The load of the mixed-writes race: on one table, rate-limit increments
// on a few hot keys, inserts of fresh keys, rows deleted right after their
// insert (an operator resetting a client) and prunes of expired rows, all
// released at once. Together they take row, gap and index locks in
// different orders, which is what makes MariaDB/InnoDB pick deadlock
// victims (error 1213) and PostgreSQL or SQLite report serialization
// failures or busy databases.
const (
	mixHotKeys          = 4         // rate-limit rows incremented concurrently
	mixHotCallers       = 12        // increments per hot key, more than mixHotLimit
	mixHotLimit         = 8         // the guard count < limit admits exactly this many per key
	mixFresh            = 16        // keys created
	mixResets           = 12        // keys created then deleted at once
	mixExpired          = 24        // rows the prunes delete
	mixPruners          = 6         // concurrent prunes of the same expired range
	mixCutoff     int64 = 1_000_000 // rows with lastRequest below it are expired
)

// ruleMixedWrites is the contention a database reports, which must be
// retried inside the adapter.
var ruleMixedWrites = fmt.Sprintf("a deadlock, serialization failure or busy database that a single Create, Delete, DeleteMany or native IncrementOne runs into is retried by the adapter, not returned: "+
	"guarded increments on %d hot keys, %d inserts, %d insert-then-delete resets and %d prunes of %d expired rows by a range on an indexed column, released at once on one table over %d pool(s), "+
	"all succeed and leave exact counts", mixHotKeys, mixFresh, mixResets, mixPruners, mixExpired, racePools)

// caseMixedWrites runs the mixed-writes race raceRounds times over
// racePools DBs (one adapter shared when the harness has no peers).
func caseMixedWrites(t testing.TB, f *Fixture) {
	dbs, err := f.DBs(racePools)
	if err != nil {
		t.Fatalf("opening the callers' DBs: %v", err)
	}
	for round := range roundsOf(raceRounds) {
		if err := raceMixedWrites(f.Ctx, f, dbs, round); err != nil {
			t.Errorf("round %d: %v", round, err)
		}
	}
}

// mixedKeys names the round's keys so that the kinds interleave in key
// order: on a database with gap locks each insert lands between rows that
// others are updating or deleting.
func mixedKeys(round int) (hot, fresh, resets, expired []string) {
	n := 0
	next := func() string { n++; return fmt.Sprintf("mix%d/%04d", round, n) }
	for i := 0; i < max(mixHotKeys, mixFresh, mixResets, mixExpired); i++ {
		if i < mixHotKeys {
			hot = append(hot, next())
		}
		if i < mixExpired {
			expired = append(expired, next())
		}
		if i < mixFresh {
			fresh = append(fresh, next())
		}
		if i < mixResets {
			resets = append(resets, next())
		}
	}
	return hot, fresh, resets, expired
}

// mixIncrement runs one guarded increment. A native IncrementOne must not
// fail at all; core's transaction fallback may give up with ErrContention
// by design (see maxContentionRetries), which the caller retries.
func mixIncrement(ctx context.Context, db *core.DB, req core.IncrementRequest) (core.Row, bool, error) {
	if db.NativeIncrement() {
		return db.IncrementOne(ctx, req)
	}
	return incrementRetrying(ctx, db, req)
}

func raceMixedWrites(ctx context.Context, f *Fixture, dbs []*core.DB, round int) error {
	rl := core.ModelRateLimit
	hot, fresh, resets, expired := mixedKeys(round)
	for i, k := range hot {
		if _, err := f.DB.Create(ctx, rl, map[string]any{"key": k, "count": 0, "lastRequest": mixCutoff + int64(i)}); err != nil {
			return err
		}
	}
	for i, k := range expired {
		if _, err := f.DB.Create(ctx, rl, map[string]any{"key": k, "count": 1, "lastRequest": mixCutoff - 1 - int64(i)}); err != nil {
			return err
		}
	}
	var (
		errs   errorList
		wins   [mixHotKeys]atomic.Int64
		pruned atomic.Int64
	)
	nInc := mixHotKeys * mixHotCallers
	Release(nInc+mixFresh+mixResets+mixPruners, func(i int) {
		db := dbs[i%len(dbs)]
		switch {
		case i < nInc:
			h := i % mixHotKeys
			_, ok, err := mixIncrement(ctx, db, core.IncrementRequest{Model: rl,
				Where:     []core.Where{core.Eq("key", hot[h]), core.Lt("count", mixHotLimit)},
				Increment: map[string]int64{"count": 1},
				Set:       map[string]any{"lastRequest": mixCutoff + 1000 + int64(i)}})
			switch {
			case err != nil:
				errs.add(fmt.Errorf("IncrementOne %s: %w", hot[h], err))
			case ok:
				wins[h].Add(1)
			}
		case i < nInc+mixFresh:
			j := i - nInc
			if _, err := db.Create(ctx, rl, map[string]any{"key": fresh[j], "count": 1, "lastRequest": mixCutoff + int64(j)}); err != nil {
				errs.add(fmt.Errorf("Create %s: %w", fresh[j], err))
			}
		case i < nInc+mixFresh+mixResets:
			j := i - nInc - mixFresh
			if _, err := db.Create(ctx, rl, map[string]any{"key": resets[j], "count": 1, "lastRequest": mixCutoff + int64(j)}); err != nil {
				errs.add(fmt.Errorf("Create %s before its reset: %w", resets[j], err))
				return
			}
			switch ok, err := db.Delete(ctx, rl, core.Eq("key", resets[j])); {
			case err != nil:
				errs.add(fmt.Errorf("Delete %s right after its insert: %w", resets[j], err))
			case !ok:
				errs.add(fmt.Errorf("Delete %s right after its insert found no row", resets[j]))
			}
		default:
			n, err := db.DeleteMany(ctx, rl, core.Lt("lastRequest", mixCutoff))
			if err != nil {
				errs.add(fmt.Errorf("DeleteMany lastRequest < %d (a prune): %w", mixCutoff, err))
			}
			pruned.Add(n)
		}
	})
	var bad []error
	if err := errs.err(); err != nil {
		bad = append(bad, err)
	}
	for h, k := range hot {
		row, ok, err := f.DB.FindOne(ctx, rl, core.Eq("key", k))
		switch {
		case err != nil:
			bad = append(bad, err)
		case !ok:
			bad = append(bad, fmt.Errorf("hot key %s is gone", k))
		case row.Int("count") != mixHotLimit || wins[h].Load() != mixHotLimit:
			bad = append(bad, fmt.Errorf("hot key %s: %d increments admitted, count %d stored; want exactly %d of %d", k, wins[h].Load(), row.Int("count"), mixHotLimit, mixHotCallers))
		}
	}
	counts := []struct {
		what  string
		where core.Where
		want  int64
	}{
		{"fresh keys stored", core.In("key", anys(fresh)...), mixFresh},
		{"reset keys left", core.In("key", anys(resets)...), 0},
		{"expired rows left", core.Lt("lastRequest", mixCutoff), 0},
		{"rows in all", core.In("key", anys(append(append(append(append([]string(nil), hot...), fresh...), resets...), expired...))...), mixHotKeys + mixFresh},
	}
	for _, c := range counts {
		n, err := f.DB.Count(ctx, rl, c.where)
		switch {
		case err != nil:
			bad = append(bad, err)
		case n != c.want:
			bad = append(bad, fmt.Errorf("%s: %d, want %d", c.what, n, c.want))
		}
	}
	if n := pruned.Load(); n != mixExpired {
		bad = append(bad, fmt.Errorf("the prunes deleted %d rows in all, want exactly the %d expired ones", n, mixExpired))
	}
	return errors.Join(bad...)
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
