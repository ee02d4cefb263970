package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	gormmysql "gorm.io/driver/mysql"
	gormpostgres "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	sluicebun "github.com/sluice-go/sluice/adapters/bun"
	sluiceent "github.com/sluice-go/sluice/adapters/ent"
	sluicegorm "github.com/sluice-go/sluice/adapters/gorm"
	"github.com/sluice-go/sluice/adapters/gorm/sqlitegorm"
	sluicepgx "github.com/sluice-go/sluice/adapters/pgx"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/gen"
)

// orm is one sluice adapter, opened on the run's counted pool.
type orm struct {
	name string
	db   *core.DB
}

// openORMs opens gorm, bun, ent and plain database/sql on the same pool, each as its users would
// (the ORM's own dialect over an existing *sql.DB), and wraps each in a
// core.DB on the run's schema.
func (e *sqlEnv) openORMs() ([]orm, error) {
	opt := core.WithSchema(e.schema)
	quiet := &gorm.Config{Logger: logger.Discard}
	var (
		g   *gorm.DB
		bd  *bun.DB
		drv *entsql.Driver
		err error
	)
	switch e.dialect {
	case gen.Postgres:
		g, err = gorm.Open(gormpostgres.New(gormpostgres.Config{Conn: e.pool}), quiet)
		// With no query hook, sluicebun runs its statements on the
		// *sql.DB under bun with bind parameters, so pgx's default
		// statement cache keeps their plans, as it does for the floor.
		bd = bun.NewDB(e.pool, pgdialect.New())
		drv = entsql.OpenDB(dialect.Postgres, e.pool)
	case gen.MySQL:
		g, err = gorm.Open(gormmysql.New(gormmysql.Config{Conn: e.pool}), quiet)
		bd = bun.NewDB(e.pool, mysqldialect.New())
		drv = entsql.OpenDB(dialect.MySQL, e.pool)
	case gen.SQLite:
		g, err = gorm.Open(sqlitegorm.Dialector(e.pool), quiet)
		bd = bun.NewDB(e.pool, sqlitedialect.New())
		drv = entsql.OpenDB(dialect.SQLite, e.pool)
	}
	if err != nil {
		return nil, fmt.Errorf("gorm: %w", err)
	}
	var out []orm
	gdb, err := sluicegorm.Open(g, opt)
	if err != nil {
		return nil, fmt.Errorf("sluicegorm: %w", err)
	}
	out = append(out, orm{"gorm", gdb})
	bdb, err := sluicebun.Open(bd, opt)
	if err != nil {
		return nil, fmt.Errorf("sluicebun: %w", err)
	}
	out = append(out, orm{"bun", bdb})
	edb, err := sluiceent.Open(drv, opt)
	if err != nil {
		return nil, fmt.Errorf("sluiceent: %w", err)
	}
	out = append(out, orm{"ent", edb})
	sdb, err := sluicesql.Open(e.pool, sqlDialect[e.dialect], opt)
	if err != nil {
		return nil, fmt.Errorf("sluicesql: %w", err)
	}
	out = append(out, orm{"sql", sdb})
	if e.dialect == gen.Postgres {
		pdb, err := e.openPgx(opt)
		if err != nil {
			return nil, fmt.Errorf("sluicepgx: %w", err)
		}
		out = append(out, orm{"pgx", pdb})
	}
	return out, nil
}

// openPgx opens the pgx adapter on a pgxpool of its own, whose statements are counted as round trips like the
// counted driver's.
func (e *sqlEnv) openPgx(opt core.Option) (*core.DB, error) {
	cfg, err := pgxpool.ParseConfig(e.dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(min(e.conns, sidePoolConns))
	cfg.ConnConfig.Tracer = roundTrips{&e.rt}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	e.cleanup = append(e.cleanup, pool.Close)
	e.pgx = pool
	return sluicepgx.Open(ctx, pool, opt)
}

// On PostgreSQL two pools stand side by side (the main one and pgx's),
// and together they must fit its default max_connections of 100: pgx's
// holds at most sidePoolConns connections, the main one at most
// mainPoolConnsPG. Each is enough for the 64 goroutines of the largest
// cells, so none waits for a connection there.
const (
	sidePoolConns   = 32
	mainPoolConnsPG = 64
)

// withParam adds a run-time parameter to a PostgreSQL DSN of either form.
func withParam(dsn, kv string) string {
	switch {
	case !strings.Contains(dsn, "://"):
		return dsn + " " + kv
	case strings.Contains(dsn, "?"):
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}

// roundTrips counts each statement pgx sends.
type roundTrips struct{ n *atomic.Int64 }

func (r roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// sqlDialect is the engine's name for each DDL dialect.
var sqlDialect = map[gen.Dialect]sluicesql.Dialect{gen.Postgres: sluicesql.Postgres, gen.MySQL: sluicesql.MySQL, gen.SQLite: sluicesql.SQLite}

// increment is core.DB.IncrementOne with the floor's guard.
func (e *sqlEnv) increment(o orm) *approach {
	decide := func(ctx context.Context, key string, max int64) (bool, error) {
		_, ok, err := o.db.IncrementOne(ctx, core.IncrementRequest{
			Model: core.ModelRateLimit,
			Where: []core.Where{
				core.Eq("key", key),
				core.Gt("lastRequest", time.Now().UnixMilli()-window.Milliseconds()),
				core.Lt("count", max),
			},
			Increment: map[string]int64{"count": 1},
		})
		return ok, err
	}
	return e.rawApproach(o.name+incrementSuffix, kindIncrement, o.name+"-increment", decide)
}

// limiter is the rate limiter's decision, ratelimit.Database on the adapter.
func (e *sqlEnv) limiter(o orm) (*approach, error) {
	return e.limiterWith(o, o.name+limiterSuffix, kindLimiter)
}

// combiningLimiter is the rate limiter with write combining
// (ratelimit.WithWriteCombining): concurrent decisions on one key fold into
// one guarded claim. It runs on the database/sql adapter: combining happens
// above the adapter, so one adapter shows it.
func (e *sqlEnv) combiningLimiter(o orm) (*approach, error) {
	return e.limiterWith(o, o.name+combiningSuffix, kindCombining, ratelimit.WithWriteCombining())
}

func (e *sqlEnv) limiterWith(o orm, name string, k kind, opts ...ratelimit.Option) (*approach, error) {
	lim, err := ratelimit.New(ratelimit.Database(o.db), opts...)
	if err != nil {
		return nil, err
	}
	decide := func(ctx context.Context, key string, max int64) (bool, error) {
		d, err := lim.Consume(ctx, key, ratelimit.Rule{Window: window, Max: max})
		return d.Allowed, err
	}
	label := strings.ReplaceAll(strings.TrimPrefix(name, o.name+" "), " ", "-")
	a := e.rawApproach(name, k, o.name+"-"+label, decide)
	if k == kindLimiter {
		a.cold = true
		warm := a.decider
		a.decider = func(sc scenario) decideFunc {
			if sc == coldKeys {
				return e.coldLimiter(o, opts)
			}
			return warm(sc)
		}
	}
	// The limit check starts from no row at all, so that the limiter's
	// creation race (one opener, the others counted) is checked too.
	a.burst = func(ctx context.Context) (decideFunc, func(context.Context) (int64, error), error) {
		key := fmt.Sprintf("burst-%s-%s-%d", o.name, label, e.burstSeq.Add(1))
		return func(ctx context.Context, _ int) (bool, error) { return decide(ctx, key, burstMax) },
			func(ctx context.Context) (int64, error) { return e.counterOf(ctx, key) }, nil
	}
	return a, nil
}

// apiKeyDecider runs verify on the seeded key of each scenario: the
// uniform keys by index, the denial-storm key, or the hot key.
func (e *sqlEnv) apiKeyDecider(verify func(ctx context.Context, key string) (bool, error)) func(sc scenario) decideFunc {
	return func(sc scenario) decideFunc {
		switch sc {
		case uniformKeys:
			return func(ctx context.Context, k int) (bool, error) { return verify(ctx, e.apiKeys.uniform[k]) }
		case denialStorm:
			return func(ctx context.Context, _ int) (bool, error) { return verify(ctx, e.apiKeys.deny) }
		default:
			return func(ctx context.Context, _ int) (bool, error) { return verify(ctx, e.apiKeys.hot) }
		}
	}
}

// verifier is API-key verification, apikey.Manager.Verify on the adapter.
func (e *sqlEnv) verifier(o orm) (*approach, error) {
	m, err := apikey.New(o.db)
	if err != nil {
		return nil, err
	}
	verify := func(ctx context.Context, key string) (bool, error) {
		r, err := m.Verify(ctx, key)
		return r.Valid, err
	}
	decider := e.apiKeyDecider(verify)
	var warm sync.Once
	return &approach{
		name: o.name + verifySuffix,
		kind: kindAPIKey,
		decider: func(sc scenario) decideFunc {
			if sc == uniformKeys {
				// Steady state: a server that has been verifying these keys
				// remembers each as its last write returned it.
				warm.Do(func() { e.warmAPIKeys(context.Background(), verify) })
			}
			return decider(sc)
		},
		stored: e.storedRequests,
		burst: func(ctx context.Context) (decideFunc, func(context.Context) (int64, error), error) {
			return e.keyBurst(ctx, m, verify)
		},
	}, nil
}

// warmAPIKeys verifies each uniform key once, on a few goroutines, so that
// the uniform cells measure the steady state of a long-running server, in
// which every key in use has been verified before and the manager
// remembers it (apikey.WithKeyStateCache): without it, a cell of a few
// thousand decisions over 10,000 keys would mostly measure first
// verifications. It runs before the cell's first read of the stored counts,
// so the consistency check does not count it; a failure shows in the cell.
func (e *sqlEnv) warmAPIKeys(ctx context.Context, verify func(context.Context, string) (bool, error)) {
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(e.apiKeys.uniform); i += workers {
				if _, err := verify(ctx, e.apiKeys.uniform[i]); err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// seedAPIKeys creates the scenarios' API keys through db: the hot key, the
// uniform keys, and the denial-storm key, spent to its rate limit.
func (e *sqlEnv) seedAPIKeys(ctx context.Context, db *core.DB, n int) error {
	m, err := apikey.New(db)
	if err != nil {
		return err
	}
	create := func(sc scenario, max int64) (string, error) {
		plain, _, err := m.Create(ctx, apikey.CreateParams{
			ReferenceID: "sluicebench", Name: string(sc),
			RateLimit: &apikey.RateLimit{Enabled: true, Window: window, Max: max},
		})
		return plain, err
	}
	if e.apiKeys.hot, err = create(hotKey, bigMax); err != nil {
		return err
	}
	if e.apiKeys.deny, err = create(denialStorm, denyMax); err != nil {
		return err
	}
	for range denyMax {
		if r, err := m.Verify(ctx, e.apiKeys.deny); err != nil || !r.Valid {
			return fmt.Errorf("spending the denial-storm key: %v %v", r.Code, err)
		}
	}
	e.apiKeys.uniform = make([]string, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	const workers = 8
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				plain, err := create(uniformKeys, bigMax)
				if err != nil {
					mu.Lock()
					firstErr = firstOf(firstErr, err)
					mu.Unlock()
					return
				}
				e.apiKeys.uniform[i] = plain
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// sqlBackend opens one SQL database with every approach on it.
func sqlBackend(ctx context.Context, name, dsn string, cfg config, runID string) (*backend, error) {
	e, err := openSQL(ctx, name, dsn, cfg, runID)
	if err != nil {
		return nil, err
	}
	b := &backend{name: name, version: e.version(ctx), keys: cfg.keys, roundTrips: e.rt.Load, close: e.close, settle: e.settle}
	fail := func(err error) (*backend, error) {
		e.close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	orms, err := e.openORMs()
	if err != nil {
		return fail(err)
	}
	if err := e.seedAPIKeys(ctx, orms[0].db, cfg.keys); err != nil {
		return fail(fmt.Errorf("seeding API keys: %w", err))
	}
	b.approaches = []*approach{e.floor()}
	if e.pgx != nil {
		b.approaches = append(b.approaches, e.pgxFloor())
	}
	b.approaches = append(b.approaches, e.reference(), e.locking(), e.betterAuthVerify(), e.handVerify())
	for _, o := range orms {
		b.approaches = append(b.approaches, e.increment(o))
	}
	for _, o := range orms {
		a, err := e.limiter(o)
		if err != nil {
			return fail(err)
		}
		b.approaches = append(b.approaches, a)
	}
	if err := e.addGCRA(ctx, b, orms); err != nil {
		return fail(err)
	}
	if err := e.addSliding(ctx, b, orms); err != nil {
		return fail(err)
	}
	for _, o := range orms {
		if o.name != "sql" {
			continue
		}
		a, err := e.combiningLimiter(o)
		if err != nil {
			return fail(err)
		}
		b.approaches = append(b.approaches, a)
	}
	for _, o := range orms {
		a, err := e.verifier(o)
		if err != nil {
			return fail(err)
		}
		b.approaches = append(b.approaches, a)
	}
	return b, nil
}
