package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/sluice-go/sluice/core"
)

// slidingKeys returns the names of the rows of windows i and i−1 of key. A
// key too long for the column with the suffix is replaced by its first
// characters, "#" and its SHA-256 in unpadded base64url, as SafeKey does.
func (s *dbStorage) slidingKeys(key string, i int64) (cur, prev string, err error) {
	name := func(k string, i int64) string {
		var b [24]byte
		return k + SlidingSeparator + string(strconv.AppendInt(b[:0], i, 10))
	}
	cur, prev = name(key, i), name(key, i-1)
	if s.keySize <= 0 || utf8.RuneCountInString(cur) <= s.keySize && utf8.RuneCountInString(prev) <= s.keySize {
		return cur, prev, nil
	}
	sum := sha256.Sum256([]byte(key))
	tail := "#" + base64.RawURLEncoding.EncodeToString(sum[:])
	longest := max(len(strconv.FormatInt(i, 10)), len(strconv.FormatInt(i-1, 10))) + len(SlidingSeparator)
	keep := s.keySize - utf8.RuneCountInString(tail) - longest
	if keep < 0 {
		return "", "", invalidf("a key column of %d characters cannot hold a SlidingWindow counter's name", s.keySize)
	}
	head := key
	for n := 0; n < len(head); {
		if keep == 0 {
			head = head[:n]
			break
		}
		_, size := utf8.DecodeRuneInString(head[n:])
		n += size
		keep--
	}
	return name(head+tail, i), name(head+tail, i-1), nil
}

// read tells the rows of the current and previous windows apart by their
// lastRequest, the start of their window, rather than by the key as
// returned, which a case-insensitive collation may spell otherwise.
func (v slide) read(rows []core.Row) (cur, prev int64, exists bool) {
	for _, r := range rows {
		switch r.Int("lastRequest") {
		case v.start:
			cur, exists = r.Int("count"), true
		case v.start - v.w:
			prev = r.Int("count")
		}
	}
	return cur, prev, exists
}

// consumeSliding reads the rows of the current and previous windows in one
// query, then counts cost with one guarded write: count += cost on the
// current window's row, guarded on count ≤ max − cost − the weighted
// previous count, or creates the row when there is none. A full window is
// denied on the read alone. A write that misses (the row changed since the
// read) or a unique conflict (a concurrent opener) reads again, at most
// attempts times. The previous window's row is read on every decision, so
// a write to it landing late (a process whose clock is behind) is seen.
func (s *dbStorage) consumeSliding(ctx context.Context, key string, rule Rule, cost, now int64, attempts int) (state, error) {
	v := newSlide(now, rule.Window.Milliseconds())
	i, _ := windowOf(now, v.w)
	kcur, kprev, err := s.slidingKeys(key, i)
	if err != nil {
		return state{}, err
	}
	if err := s.ready(ctx); err != nil {
		return state{}, err
	}
	havePrev := false
	for n := 0; n < attempts; n++ {
		if err := ctx.Err(); err != nil {
			return state{}, err
		}
		var exists bool
		if !havePrev {
			rows, err := s.db.FindMany(ctx, model, []core.Where{core.In("key", kprev, kcur)}, nil)
			if err != nil {
				return state{}, err
			}
			v.cur, v.prev, exists = v.read(rows)
			havePrev = true
		} else {
			row, ok, err := s.readRow(ctx, kcur)
			if err != nil {
				return state{}, err
			}
			v.cur, exists = row.Int("count"), ok
		}
		bound := v.bound(cost, rule.Max)
		if v.cur > bound {
			return v.denied(cost, rule.Max), nil
		}
		if !exists {
			if _, err := s.db.Create(ctx, model, map[string]any{"key": kcur, "count": cost, "lastRequest": v.start}); err != nil {
				if s.createLost(err) {
					continue // a concurrent opener won: decide on its row
				}
				return state{}, err
			}
			return v.admitted(cost), nil
		}
		sc := requests.Get().(*request)
		sc.inc["count"] = cost
		count, ok, err := s.db.IncrementValue(ctx, core.IncrementRequest{
			Model:     model,
			Where:     append(sc.where[:0], core.Eq("key", kcur), core.Lte("count", bound)),
			Increment: sc.inc,
		})
		sc.release()
		switch {
		case s.lost(err):
		case err != nil:
			return state{}, err
		case ok:
			return v.admitted(count), nil
		}
	}
	return state{}, fmt.Errorf("%w: still losing races after %d attempts", core.ErrContention, attempts)
}

func (s *dbStorage) peekSliding(ctx context.Context, key string, rule Rule, now int64) (state, error) {
	v := newSlide(now, rule.Window.Milliseconds())
	i, _ := windowOf(now, v.w)
	kcur, kprev, err := s.slidingKeys(key, i)
	if err != nil {
		return state{}, err
	}
	if err := s.ready(ctx); err != nil {
		return state{}, err
	}
	rows, err := s.db.FindMany(ctx, model, []core.Where{core.In("key", kprev, kcur)}, nil)
	if err != nil {
		return state{}, err
	}
	v.cur, v.prev, _ = v.read(rows)
	return v.peeked(rule.Max), nil
}
