package adaptertest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

// The load of the storage races: as in the adapter races, raceCallers
// goroutines released at once, round-robin over one client or racePools,
// raceRounds times on fresh keys.
const storageIncrements = 8 // increments per caller in IncrementExact

// storageRace runs a storage race once per round (raceRounds, or one
// under -short) on keys of its own, on one client or, when the case needs
// severalClients, on racePools of them, and stops at the first round that
// went wrong.
func storageRace(body func(ctx context.Context, f *storageFixture, clients []driver.SecondaryStorage, round int) error) func(testing.TB, *storageFixture) {
	return func(t testing.TB, f *storageFixture) {
		clients := []driver.SecondaryStorage{f.s}
		if f.needs&severalClients != 0 {
			var err error
			if clients, err = f.clients(racePools); err != nil {
				t.Fatal(err)
			}
		}
		rounds := roundsOf(raceRounds)
		for round := range rounds {
			if err := body(f.ctx, f, clients, round); err != nil {
				t.Errorf("round %d of %d: %v", round+1, rounds, err)
				return
			}
		}
	}
}

const ruleRaceIncrementExact = "Increment adds by in one atomic step: N callers adding 1 K times each leave exactly N×K, and the values they are handed are 1 to N×K, each once"

func raceIncrementExact(ctx context.Context, f *storageFixture, clients []driver.SecondaryStorage, round int) error {
	key := "incr:" + strconv.Itoa(round)
	var errs errorList
	seen := make([][]int64, raceCallers)
	Release(raceCallers, func(i int) {
		s := clients[i%len(clients)]
		for range storageIncrements {
			c, err := s.Increment(ctx, key, 1, time.Hour)
			if err != nil {
				errs.add(err)
				return
			}
			seen[i] = append(seen[i], c.Value)
		}
	})
	if err := errs.err(); err != nil {
		return fmt.Errorf("Increment: %w", err)
	}
	const total = raceCallers * storageIncrements
	if v, ok, err := f.s.Get(ctx, key); err != nil || !ok || v != strconv.Itoa(total) {
		return fmt.Errorf("after %d callers added 1 %d times each, the counter reads %q (present %v, err %v); want %d: increments were lost", raceCallers, storageIncrements, v, ok, err, total)
	}
	all := slices.Concat(seen...)
	slices.Sort(all)
	for i, v := range all {
		if v != int64(i+1) {
			return fmt.Errorf("the values handed to the callers are not 1 to %d each once: the %dth smallest is %d", total, i+1, v)
		}
	}
	return nil
}

const ruleRaceBoundedExact = "driver.BoundedIncrementer adds only when the result stays at or below max, in one atomic step: with N > max callers exactly max/by are admitted, the counter ends at that total, and every refusal sees it"

func raceBoundedExact(ctx context.Context, f *storageFixture, clients []driver.SecondaryStorage, round int) error {
	const limit = 10
	// Half the callers add 1, half add 3: 10 and 3 admissions.
	keys := [2]string{"bounded1:" + strconv.Itoa(round), "bounded3:" + strconv.Itoa(round)}
	by := [2]int64{1, 3}
	var errs errorList
	var mu sync.Mutex
	admitted := [2][]int64{}
	refusedSaw := [2][]int64{}
	Release(raceCallers, func(i int) {
		k := i % 2
		c, ok, err := clients[i%len(clients)].(driver.BoundedIncrementer).IncrementBounded(ctx, keys[k], by[k], limit, time.Hour)
		if err != nil {
			errs.add(err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ok {
			admitted[k] = append(admitted[k], c.Value)
		} else {
			refusedSaw[k] = append(refusedSaw[k], c.Value)
		}
	})
	if err := errs.err(); err != nil {
		return fmt.Errorf("IncrementBounded: %w", err)
	}
	for k := range keys {
		n := int64(limit / by[k])
		want := n * by[k]
		if int64(len(admitted[k])) != n {
			return fmt.Errorf("by %d, max %d: %d of %d callers admitted; want exactly %d", by[k], limit, len(admitted[k]), raceCallers/2, n)
		}
		if v, ok, err := f.s.Get(ctx, keys[k]); err != nil || !ok || v != strconv.FormatInt(want, 10) {
			return fmt.Errorf("by %d, max %d: the counter reads %q (present %v, err %v); want %d", by[k], limit, v, ok, err, want)
		}
		slices.Sort(admitted[k])
		for i, v := range admitted[k] {
			if v != int64(i+1)*by[k] {
				return fmt.Errorf("by %d: the admitted callers were handed %v; want %d, %d, … %d, each once", by[k], admitted[k], by[k], 2*by[k], want)
			}
		}
		for _, v := range refusedSaw[k] {
			if v != want {
				return fmt.Errorf("by %d, max %d: a refused caller saw the counter at %d; only %d can refuse", by[k], limit, v, want)
			}
		}
	}
	return nil
}

const ruleRaceCreateOneWinner = "keystore.Creator stores a value only where none is, in one atomic step: of N callers creating one key at once, each with a value of its own, exactly one is told it created it, and the key holds that caller's value"

func raceCreateOneWinner(ctx context.Context, f *storageFixture, clients []driver.SecondaryStorage, round int) error {
	key := "create:" + strconv.Itoa(round)
	var errs errorList
	winners := make(chan string, raceCallers)
	Release(raceCallers, func(i int) {
		value := "caller " + strconv.Itoa(i)
		created, err := clients[i%len(clients)].(keystore.Creator).Create(ctx, key, value)
		if err != nil {
			errs.add(err)
		} else if created {
			winners <- value
		}
	})
	close(winners)
	if err := errs.err(); err != nil {
		return fmt.Errorf("Create: %w", err)
	}
	var won []string
	for w := range winners {
		won = append(won, w)
	}
	if len(won) != 1 {
		return fmt.Errorf("%d of %d concurrent callers were told they created the key (%v among them); want exactly 1", len(won), raceCallers, won[:min(len(won), 3)])
	}
	if v, ok, err := f.s.Get(ctx, key); err != nil || !ok || v != won[0] {
		return fmt.Errorf("the key holds %q (present %v, err %v); want the winner's %q", v, ok, err, won[0])
	}
	return nil
}
