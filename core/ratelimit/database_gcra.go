package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
)

// consumeGCRA keeps the tat in the rateLimit row's lastRequest (count stays
// 0). An admitted request is one of two guarded writes, each one round
// trip and each exact on its own:
//   - on a busy key (tat > now), the increment lastRequest += c·T guarded
//     on lastRequest > now and lastRequest ≤ now + Max·T − c·T, which
//     returns the new tat;
//   - on an idle key (tat ≤ now, an empty bucket), the set lastRequest :=
//     now + c·T guarded on lastRequest ≤ now, so that one concurrent
//     caller wins.
//
// The storage guesses which one to try from the tat it last saw for the
// key (s.tats): remembered and still ahead of now, the increment; else
// (idle, or unknown: a fresh or idle key is the common case) the set. A
// set that misses on a key seen before most likely lost to a concurrent
// caller who made it busy: the increment next. Otherwise, or when that
// misses too, it reads the row and does what the row calls for: none is
// created with tat now + c·T (a unique conflict means a concurrent opener
// won: try again); a tat at or before now is set, one ahead with room
// incremented, one too far ahead is a denial. A write after the read that
// misses means the row changed since: try again. A wrong guess costs a
// round trip, never exactness: every guard is in the database.
func (s *dbStorage) consumeGCRA(ctx context.Context, key string, rule Rule, cost, now int64, attempts int) (state, error) {
	if err := s.prepare(ctx, key); err != nil {
		return state{}, err
	}
	t := gcraInterval(rule)
	burst, inc := rule.Max*t, cost*t
	tats := s.tats.get()
	last, known := tats.get(key, now)
	busy := known && last > now
	admit := func(tat int64) (state, error) {
		tats.put(key, tat, now)
		return gcraState(rule, t, tat, now, true), nil
	}
	for range attempts {
		if err := ctx.Err(); err != nil {
			return state{}, err
		}
		tat, ok, err := s.gcraWrite(ctx, key, busy, now, burst, inc)
		switch {
		case s.lost(err):
			continue
		case err != nil:
			return state{}, err
		case ok:
			return admit(tat)
		}
		if known && !busy {
			tat, ok, err := s.gcraWrite(ctx, key, true, now, burst, inc)
			switch {
			case s.lost(err):
				continue
			case err != nil:
				return state{}, err
			case ok:
				return admit(tat)
			}
		}

		// The guess missed: read the row and do what it calls for.
		row, found, err := s.readRow(ctx, key)
		if err != nil {
			return state{}, err
		}
		if !found {
			if _, err := s.db.Create(ctx, model, map[string]any{"key": key, "count": int64(0), "lastRequest": now + inc}); err != nil {
				if s.createLost(err) {
					known, busy = true, true // a concurrent opener's tat is likely ahead of now
					continue
				}
				return state{}, err
			}
			return admit(now + inc)
		}
		stored := row.Int("lastRequest")
		if _, st := gcraCounter(counter{last: stored}, true, rule, cost, now); !st.allowed {
			tats.put(key, stored, now)
			return st, nil
		}
		known, busy = true, stored > now
		tat, ok, err = s.gcraWrite(ctx, key, busy, now, burst, inc)
		switch {
		case s.lost(err):
		case err != nil:
			return state{}, err
		case ok:
			return admit(tat)
		}
		// The row changed between the read and the write: again.
	}
	return state{}, fmt.Errorf("%w: still losing races after %d attempts", core.ErrContention, attempts)
}

// gcraWrite is one guarded write of an admitted request and the new tat:
// on a busy key, the increment; on an idle one, the set. ok is false when
// the guard selected nothing.
func (s *dbStorage) gcraWrite(ctx context.Context, key string, busy bool, now, burst, inc int64) (tat int64, ok bool, err error) {
	sc := requests.Get().(*request)
	defer sc.release()
	if busy {
		sc.inc["lastRequest"] = inc
		return s.db.IncrementValue(ctx, core.IncrementRequest{
			Model:     model,
			Where:     append(sc.where[:0], core.Eq("key", key), core.Gt("lastRequest", now), core.Lte("lastRequest", now+burst-inc)),
			Increment: sc.inc,
		})
	}
	sc.set["lastRequest"] = now + inc
	_, ok, err = s.db.IncrementOne(ctx, core.IncrementRequest{
		Model: model,
		Where: append(sc.where[:0], core.Eq("key", key), core.Lte("lastRequest", now)),
		Set:   sc.set,
	})
	return now + inc, ok, err
}

// maxRememberedTATs bounds the tats a database storage keeps for GCRA (a
// key forgotten costs at most two round trips more, once), and
// tatMemoGrace is how long past its tat a key stays remembered: idle, but
// known to have a row.
const (
	maxRememberedTATs = 1 << 16
	tatMemoGrace      = int64(10 * time.Minute / time.Millisecond)
)

// tatMemo is a database storage's memory of each GCRA key's tat as this
// process last saw it stored, which only picks the guarded writes to try
// first. An entry expires tatMemoGrace after its tat; when the map is
// full, the oldest tat goes first. Its zero value is ready: the map is made on
// first use, so that a limiter in another mode never allocates it.
type tatMemo struct {
	once sync.Once
	m    *boundedMap[int64]
}

func (t *tatMemo) get() *boundedMap[int64] {
	t.once.Do(func() { t.m = newBoundedMap(maxRememberedTATs, func(tat int64) int64 { return tat + tatMemoGrace }) })
	return t.m
}

func (s *dbStorage) peekGCRA(ctx context.Context, key string, rule Rule, now int64) (state, error) {
	if err := s.prepare(ctx, key); err != nil {
		return state{}, err
	}
	row, ok, err := s.db.FindOne(ctx, model, core.Eq("key", key))
	if err != nil {
		return state{}, err
	}
	tat := now
	if ok {
		tat = row.Int("lastRequest")
	}
	return gcraPeek(rule, gcraInterval(rule), tat, now), nil
}
