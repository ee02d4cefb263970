package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice/gen"
)

// The three hand-written approaches, on database/sql alone.

// The approaches' names, as the table shows them.
const (
	floorName       = "SQL floor: guarded UPDATE"
	pgxFloorName    = "SQL floor on pgx's pool: guarded UPDATE"
	referenceName   = "SQL reference: read, then guarded write"
	lockingName     = "SQL pessimistic: SELECT … FOR UPDATE"
	incrementSuffix = " IncrementOne"
	limiterSuffix   = " rate limiter"
	combiningSuffix = " rate limiter, write combining"
	verifySuffix    = " API-key verify"
	redisSluiceName = "sluice Redis storage (rate limiter)"
	redisRateName   = "go-redis/redis_rate"
)

// ormNames are the adapters, in the order they run.
var ormNames = []string{"gorm", "bun", "ent", "sql", "pgx"}

// errContention reports a read-then-write decision that kept losing races.
var errContention = errors.New("lost the race 10 times")

// guardedUpdate returns the floor's single statement: count + 1 guarded on
// the key, the window and the limit, with the row back through RETURNING,
// or, on MySQL and MariaDB, which have no UPDATE … RETURNING, with the
// affected-row count as the answer.
func (e *sqlEnv) guardedUpdate() func(ctx context.Context, key string, max int64) (bool, error) {
	returning := e.dialect != gen.MySQL
	q := e.floorStatement()
	return func(ctx context.Context, key string, max int64) (bool, error) {
		since := time.Now().UnixMilli() - window.Milliseconds()
		if returning {
			var c int64
			err := e.pool.QueryRowContext(ctx, q, key, since, max).Scan(&c)
			if errors.Is(err, sql.ErrNoRows) {
				return false, nil
			}
			return err == nil, err
		}
		res, err := e.pool.ExecContext(ctx, q, key, since, max)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n == 1, err
	}
}

// floorStatement is the floor's SQL in the dialect's placeholders: the
// key, the window's start and the limit are its arguments.
func (e *sqlEnv) floorStatement() string {
	q := fmt.Sprintf("UPDATE %s SET %s = %s + 1 WHERE %s = ? AND %s > ? AND %s < ?",
		e.rlName, e.cCount, e.cCount, e.cKey, e.cLast, e.cCount)
	if e.dialect != gen.MySQL {
		q += " RETURNING " + e.cCount
	}
	return e.sql(q)
}

// rawApproach builds an approach on the rate-limit rows from a decision on
// one key.
func (e *sqlEnv) rawApproach(name string, k kind, label string, decide func(ctx context.Context, key string, max int64) (bool, error)) *approach {
	return &approach{
		name: name,
		kind: k,
		decider: func(sc scenario) decideFunc {
			keyOf, max := e.rateLimitKey(sc)
			return func(ctx context.Context, i int) (bool, error) { return decide(ctx, keyOf(i), max) }
		},
		stored: e.storedCounters,
		burst: func(ctx context.Context) (decideFunc, func(context.Context) (int64, error), error) {
			key, err := e.freshCounter(ctx, label)
			if err != nil {
				return nil, nil, err
			}
			return func(ctx context.Context, _ int) (bool, error) { return decide(ctx, key, burstMax) },
				func(ctx context.Context) (int64, error) { return e.counterOf(ctx, key) }, nil
		},
	}
}

// floor is one guarded UPDATE per decision: the least any approach can do.
func (e *sqlEnv) floor() *approach {
	a := e.rawApproach(floorName, kindFloor, "floor", e.guardedUpdate())
	a.cold = true // it remembers nothing: every key is as cold as any
	return a
}

// pgxFloor is the floor's statement on the pgx adapter's own pool, written
// by hand in pgx: what the pgx adapter's limiter is measured against, since
// a pool of its own, with server sessions of its own, idle while the other
// approaches run, is not in the same state as the main one.
func (e *sqlEnv) pgxFloor() *approach {
	q := e.floorStatement()
	decide := func(ctx context.Context, key string, max int64) (bool, error) {
		var c int64
		err := e.pgx.QueryRow(ctx, q, key, time.Now().UnixMilli()-window.Milliseconds(), max).Scan(&c)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	}
	return e.rawApproach(pgxFloorName, kindPgxFloor, "pgx-floor", decide)
}

// reference is the algorithm of Better Auth's database storage as the seed
// describes it: read the row, decide, then the guarded in-window increment,
// re-reading after a lost race.
func (e *sqlEnv) reference() *approach {
	sel := e.sql(fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s = ?", e.cCount, e.cLast, e.rlName, e.cKey))
	write := e.guardedUpdate()
	decide := func(ctx context.Context, key string, max int64) (bool, error) {
		for range 10 {
			var c, last int64
			err := e.pool.QueryRowContext(ctx, sel, key).Scan(&c, &last)
			if errors.Is(err, sql.ErrNoRows) {
				return false, errNoRow
			}
			if err != nil {
				return false, err
			}
			if time.Now().UnixMilli()-last >= window.Milliseconds() {
				return false, errors.New("the window is over: the run outlived it")
			}
			if c >= max {
				return false, nil
			}
			ok, err := write(ctx, key, max)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, errContention
	}
	return e.rawApproach(referenceName, kindReference, "reference", decide)
}

// locking is pessimistic locking: a transaction that locks the row with
// SELECT … FOR UPDATE, decides, and updates it. On SQLite the transaction
// takes the database's write lock at BEGIN (_txlock=immediate), which is the
// same thing there.
func (e *sqlEnv) locking() *approach {
	sel := fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s = ?", e.cCount, e.cLast, e.rlName, e.cKey)
	if e.dialect != gen.SQLite {
		sel += " FOR UPDATE"
	}
	sel = e.sql(sel)
	upd := e.sql(fmt.Sprintf("UPDATE %s SET %s = %s + 1 WHERE %s = ?", e.rlName, e.cCount, e.cCount, e.cKey))
	decide := func(ctx context.Context, key string, max int64) (admitted bool, err error) {
		tx, err := e.pool.BeginTx(ctx, nil)
		if err != nil {
			return false, err
		}
		defer func() {
			if !admitted {
				tx.Rollback()
			}
		}()
		var c, last int64
		if err := tx.QueryRowContext(ctx, sel, key).Scan(&c, &last); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				err = errNoRow
			}
			return false, err
		}
		if c >= max || time.Now().UnixMilli()-last >= window.Milliseconds() {
			return false, nil
		}
		if _, err := tx.ExecContext(ctx, upd, key); err != nil {
			return false, err
		}
		if err := tx.Commit(); err != nil {
			return false, err
		}
		return true, nil
	}
	return e.rawApproach(lockingName, kindLocking, "locking", decide)
}
