package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

// handVerifyName is the careful hand-written verification's name, and
// kindAPIKeyHand its kind, which the verification ratios divide by.
const (
	handVerifyName      = "SQL hand-written API-key verify: SELECT, then one guarded UPDATE"
	kindAPIKeyHand kind = "apikey-hand-written"
)

// handVerify is API-key verification as a careful programmer writes it by
// hand on database/sql, the peer the verification is held to: read the
// key by its hash (the nine columns the decision needs, scanned into typed
// destinations), decide, and make one UPDATE by id guarded on exactly the
// bounds of the decision: an open window with room (requestCount <
// rateLimitMax) for the in-window increment, an ended or never-started
// window for the reset, and remaining > 0 when the key has a quota; it
// stamps updatedAt as sluice does. Its affected-row count is the answer;
// a miss reads the key again and decides again (at most baMaxAttempts
// times). Two round trips per admission, the second a commit. Refills are
// left out: the seeded keys have none (a key with one is refused with an
// error, so it cannot pass unnoticed).
func (e *sqlEnv) handVerify() *approach {
	col := func(field string) string {
		c, _ := e.ak.Column(field)
		return e.dialect.Quote(c.Name)
	}
	t, id := e.akName, col("id")
	count, last, rem, upd := col("requestCount"), col("lastRequest"), col("remaining"), col("updatedAt")
	sel := e.sql(fmt.Sprintf("SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s FROM %s WHERE %s = ?",
		id, col("enabled"), col("expiresAt"), rem, col("refillInterval"), col("rateLimitEnabled"),
		col("rateLimitTimeWindow"), col("rateLimitMax"), count, last, t, col("key")))
	quota := func(has bool) (set, where string) {
		if !has {
			return "", ""
		}
		return fmt.Sprintf(", %s = %s - 1", rem, rem), fmt.Sprintf(" AND %s > 0", rem)
	}
	var inc, reset, resetNull [2]string // without and with a quota
	for i, has := range []bool{false, true} {
		qs, qw := quota(has)
		inc[i] = e.sql(fmt.Sprintf("UPDATE %s SET %s = %s + 1, %s = ?%s WHERE %s = ? AND %s > ? AND %s < ?%s", t, count, count, upd, qs, id, last, count, qw))
		reset[i] = e.sql(fmt.Sprintf("UPDATE %s SET %s = 1, %s = ?, %s = ?%s WHERE %s = ? AND %s <= ?%s", t, count, last, upd, qs, id, last, qw))
		resetNull[i] = e.sql(fmt.Sprintf("UPDATE %s SET %s = 1, %s = ?, %s = ?%s WHERE %s = ? AND %s IS NULL%s", t, count, last, upd, qs, id, last, qw))
	}
	exec := e.execOne
	verify := func(ctx context.Context, plain string) (bool, error) {
		hash := keystore.Hash(plain)
		for range baMaxAttempts {
			var (
				kid                        int64
				enabled, rlEnabled         scanBool
				expires, lastReq           scanTime
				remaining, refill, w, max_ sql.NullInt64
				requests                   int64
			)
			err := e.pool.QueryRowContext(ctx, sel, hash).Scan(&kid, &enabled, &expires, &remaining, &refill, &rlEnabled, &w, &max_, &requests, &lastReq)
			if errors.Is(err, sql.ErrNoRows) {
				return false, nil // invalid
			}
			if err != nil {
				return false, err
			}
			now := time.Now().UTC().Truncate(time.Millisecond)
			switch {
			case !bool(enabled) || (expires.ok && !now.Before(expires.t)):
				return false, nil
			case refill.Valid:
				return false, errors.New("hand-written verify: refills are not written here")
			case remaining.Valid && remaining.Int64 <= 0:
				return false, nil
			case !bool(rlEnabled) || !w.Valid || !max_.Valid:
				return false, errors.New("hand-written verify: the seeded keys all have a rate limit")
			}
			q := 0
			if remaining.Valid {
				q = 1
			}
			start := now.Add(-time.Duration(w.Int64) * time.Millisecond)
			var ok bool
			switch {
			case !lastReq.ok:
				ok, err = exec(ctx, resetNull[q], e.bindTime(now), e.bindTime(now), kid)
			case !lastReq.t.After(start):
				ok, err = exec(ctx, reset[q], e.bindTime(now), e.bindTime(now), kid, e.bindTime(start))
			case requests >= max_.Int64:
				return false, nil
			default:
				ok, err = exec(ctx, inc[q], e.bindTime(now), kid, e.bindTime(start), max_.Int64)
			}
			if err != nil || ok {
				return ok, err
			}
		}
		return false, errContention
	}
	return &approach{
		name:    handVerifyName,
		kind:    kindAPIKeyHand,
		decider: e.apiKeyDecider(verify),
		stored:  e.storedRequests,
		burst:   e.freshKeyBurst(verify),
	}
}

// scanBool scans a boolean column in any form the drivers return it.
type scanBool bool

func (b *scanBool) Scan(v any) error {
	x, err := baBool(v)
	*b = scanBool(x)
	return err
}

// scanTime scans a nullable time column as the sluice SQL adapter stores it.
type scanTime struct {
	t  time.Time
	ok bool
}

func (s *scanTime) Scan(v any) error {
	if v == nil {
		*s = scanTime{}
		return nil
	}
	t, err := driver.ParseTime(v)
	*s = scanTime{t: t, ok: err == nil}
	return err
}
