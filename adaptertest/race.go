package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-go/sluice/core"
)

// The load of the race cases. Each case repeats its race raceRounds times
// on fresh rows, so that an adapter that only sometimes lets a stale guard
// through still fails reliably; raceCallers goroutines are released at once
// in every round, far more than any limit they race for. The fallback
// variants exercise core's fallback, which core's own tests cover, over
// the adapter's FindOne and UpdateMany: one round of each is enough there,
// and it is the slowest path on every database.
const (
	raceRounds         = 3
	raceFallbackRounds = 1
	raceCallers        = 64
	racePools          = 4
)

// roundsOf is n rounds, or one under go test -short: a quick pass over
// every race, for runs that repeat a full one (CI's per-module runs).
func roundsOf(n int) int {
	if testing.Short() {
		return 1
	}
	return n
}

// The sentences of the contract the races check.
const (
	ruleGuardedDecrement = "a guarded decrement (budget > 0, budget - 1) from L with N > L concurrent callers admits exactly L and leaves 0, never below"
	ruleBoundedIncrement = "an increment guarded by count < max with N > max concurrent callers admits exactly max and stores max"
	ruleCASReset         = "a reset guarded on the observed value (lastRequest <= observed, then Set lastRequest = now) has exactly one winner, whose write is the one stored"
	ruleMultiRow         = "where several rows match the guard, concurrent callers each change exactly one row: total budget B admits exactly B callers, and no caller misses while a matching row remains"
)

// race runs a race body once per round, each round on rows of its own,
// with the callers the case asks for (f.callers), and reports every round
// that went wrong. Through core's fallback, which core's own tests cover,
// one round is enough, and it is the slowest path on every database.
// Under go test -short, which repeats a full run (CI's per-module runs),
// the several-pool cases skip: their single-pool siblings still run every
// race.
func race(body func(ctx context.Context, f *Fixture, dbs []*core.DB, round int) error) func(testing.TB, *Fixture) {
	return func(t testing.TB, f *Fixture) {
		if testing.Short() && f.needs&severalPools != 0 {
			t.Skip("-short runs the single-pool variant of each race")
		}
		rounds := roundsOf(raceRounds)
		if f.needs&viaFallback != 0 {
			rounds = raceFallbackRounds
		}
		dbs, err := f.callers()
		if err != nil {
			t.Fatalf("opening the callers' DBs: %v", err)
		}
		for round := range rounds {
			if err := body(f.Ctx, f, dbs, round); err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
	}
}

// tally counts how many winners got back each state of the row, to prove that
// no two winners saw the same state.
type tally struct {
	mu   sync.Mutex
	seen map[string]int
}

func (t *tally) add(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]int{}
	}
	t.seen[key]++
}

// expectOnce reports keys seen other than exactly once.
func (t *tally) expectOnce(keys []string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var bad []error
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
		if n := t.seen[k]; n != 1 {
			bad = append(bad, fmt.Errorf("%d winners saw %s, want exactly 1", n, k))
		}
	}
	for k, n := range t.seen {
		if !want[k] {
			bad = append(bad, fmt.Errorf("%d winners saw %s, which no correct run produces", n, k))
		}
	}
	return errors.Join(bad...)
}

func raceGuardedDecrement(ctx context.Context, f *Fixture, dbs []*core.DB, round int) error {
	const limit = 10
	r, err := f.DB.Create(ctx, counterModel, map[string]any{"name": fmt.Sprint("dec", round), "budget": limit})
	if err != nil {
		return err
	}
	req := core.IncrementRequest{Model: counterModel,
		Where:     []core.Where{core.Eq("id", r.Int("id")), core.Gt("budget", 0)},
		Increment: map[string]int64{"budget": -1}}
	var wins atomic.Int64
	var errs errorList
	var seen tally
	Release(raceCallers, func(i int) {
		row, ok, err := incrementRetrying(ctx, dbs[i%len(dbs)], req)
		switch {
		case err != nil:
			errs.add(err)
		case ok:
			wins.Add(1)
			seen.add(fmt.Sprintf("budget %d", row.Int("budget")))
		}
	})
	var want []string
	for b := 0; b < limit; b++ {
		want = append(want, fmt.Sprintf("budget %d", b))
	}
	return check(ctx, f, counterModel, r.Int("id"), "budget", 0, wins.Load(), limit, errs.err(), seen.expectOnce(want))
}

func raceBoundedIncrement(ctx context.Context, f *Fixture, dbs []*core.DB, round int) error {
	const max = 10
	key := fmt.Sprint("inc", round)
	r, err := f.DB.Create(ctx, core.ModelRateLimit, map[string]any{"key": key, "count": 0, "lastRequest": 1})
	if err != nil {
		return err
	}
	var wins atomic.Int64
	var errs errorList
	var seen tally
	Release(raceCallers, func(i int) {
		row, ok, err := incrementRetrying(ctx, dbs[i%len(dbs)], core.IncrementRequest{Model: core.ModelRateLimit,
			Where:     []core.Where{core.Eq("key", key), core.Lt("count", max)},
			Increment: map[string]int64{"count": 1},
			Set:       map[string]any{"lastRequest": int64(1000 + i)}})
		switch {
		case err != nil:
			errs.add(err)
		case ok:
			wins.Add(1)
			seen.add(fmt.Sprintf("count %d", row.Int("count")))
		}
	})
	var want []string
	for c := 1; c <= max; c++ {
		want = append(want, fmt.Sprintf("count %d", c))
	}
	return check(ctx, f, core.ModelRateLimit, r.Int("id"), "count", max, wins.Load(), max, errs.err(), seen.expectOnce(want))
}

func raceCASReset(ctx context.Context, f *Fixture, dbs []*core.DB, round int) error {
	const observed = int64(1_000_000)
	key := fmt.Sprint("cas", round)
	r, err := f.DB.Create(ctx, core.ModelRateLimit, map[string]any{"key": key, "count": 7, "lastRequest": observed})
	if err != nil {
		return err
	}
	var wins atomic.Int64
	var winner atomic.Int64 // the lastRequest the last winner wrote
	var errs errorList
	Release(raceCallers, func(i int) {
		now := observed + 1 + int64(i) // each caller's own clock reading, so the stored row names the winner
		row, ok, err := incrementRetrying(ctx, dbs[i%len(dbs)], core.IncrementRequest{Model: core.ModelRateLimit,
			Where: []core.Where{core.Eq("key", key), core.Lte("lastRequest", observed)},
			Set:   map[string]any{"lastRequest": now, "count": 1}})
		switch {
		case err != nil:
			errs.add(err)
		case ok:
			wins.Add(1)
			winner.Store(now)
			if row.Int("lastRequest") != now || row.Int("count") != 1 {
				errs.add(fmt.Errorf("the winner wrote lastRequest %d, count 1, but got back %v", now, row))
			}
		}
	})
	var extra error
	if wins.Load() == 1 {
		stored, ok, err := f.DB.FindOne(ctx, core.ModelRateLimit, core.Eq("id", r.Int("id")))
		if err == nil && ok && stored.Int("lastRequest") != winner.Load() {
			extra = fmt.Errorf("stored lastRequest %d, but the winner wrote %d", stored.Int("lastRequest"), winner.Load())
		}
	}
	return check(ctx, f, core.ModelRateLimit, r.Int("id"), "count", 1, wins.Load(), 1, errs.err(), extra)
}

func raceMultiRow(ctx context.Context, f *Fixture, dbs []*core.DB, round int) error {
	const rows, budget, callers = 3, 20, 90
	name := fmt.Sprint("multi", round)
	var ids []int64
	for i := 0; i < rows; i++ {
		r, err := f.DB.Create(ctx, counterModel, map[string]any{"name": name, "budget": budget})
		if err != nil {
			return err
		}
		ids = append(ids, r.Int("id"))
	}
	decoy, err := f.DB.Create(ctx, counterModel, map[string]any{"name": name + "x", "budget": budget})
	if err != nil {
		return err
	}
	guard := []core.Where{core.Eq("name", name), core.Gt("budget", 0)}
	var wins atomic.Int64
	var errs errorList
	var seen tally
	Release(callers, func(i int) {
		db := dbs[i%len(dbs)]
		row, ok, err := incrementRetrying(ctx, db, core.IncrementRequest{Model: counterModel, Where: guard,
			Increment: map[string]int64{"budget": -1}})
		switch {
		case err != nil:
			errs.add(err)
		case ok:
			wins.Add(1)
			seen.add(fmt.Sprintf("row %d at budget %d", row.Int("id"), row.Int("budget")))
		default:
			// Budgets only go down, so a row with budget left now had
			// budget left when the guard was evaluated: the miss was false.
			left, err := db.Count(ctx, counterModel, guard...)
			if err != nil {
				errs.add(err)
			} else if left > 0 {
				errs.add(fmt.Errorf("false miss: IncrementOne matched nothing, yet %d row(s) still satisfy the guard afterwards", left))
			}
		}
	})
	var want []string
	for _, id := range ids {
		for b := 0; b < budget; b++ {
			want = append(want, fmt.Sprintf("row %d at budget %d", id, b))
		}
	}
	var bad []error
	if err := errs.err(); err != nil {
		bad = append(bad, err)
	}
	if n := wins.Load(); n != rows*budget {
		bad = append(bad, fmt.Errorf("%d callers won, want exactly %d (the total budget of %d rows)", n, rows*budget, rows))
	}
	for _, id := range append(ids, decoy.Int("id")) {
		r, ok, err := f.DB.FindOne(ctx, counterModel, core.Eq("id", id))
		want := int64(0)
		if id == decoy.Int("id") {
			want = budget
		}
		switch {
		case err != nil:
			bad = append(bad, err)
		case !ok:
			bad = append(bad, fmt.Errorf("row %d is gone", id))
		case r.Int("budget") != want:
			bad = append(bad, fmt.Errorf("row %d stored budget %d, want %d", id, r.Int("budget"), want))
		}
	}
	if err := seen.expectOnce(want); err != nil {
		bad = append(bad, err)
	}
	return errors.Join(bad...)
}

// check compares a race's outcome with the exact one expected: exactly
// wantWins callers won and the stored row's column holds wantStored. The
// other problems already found come in found (nil entries are ignored).
func check(ctx context.Context, f *Fixture, model string, id int64, column string, wantStored, wins, wantWins int64, found ...error) error {
	bad := append([]error(nil), found...)
	if wins != wantWins {
		bad = append(bad, fmt.Errorf("%d callers won, want exactly %d", wins, wantWins))
	}
	stored, ok, err := f.DB.FindOne(ctx, model, core.Eq("id", id))
	switch {
	case err != nil:
		bad = append(bad, err)
	case !ok:
		bad = append(bad, fmt.Errorf("row %d is gone", id))
	case stored.Int(column) != wantStored:
		bad = append(bad, fmt.Errorf("stored %s is %d, want %d", column, stored.Int(column), wantStored))
	}
	return errors.Join(bad...)
}
