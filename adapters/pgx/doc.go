// Package sluicepgx is the sluice adapter for jackc/pgx/v5 on PostgreSQL,
// without database/sql: for applications, sqlc users among them, that hold
// a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
//
// It only runs statements: building them, CRUD, the native IncrementOne (one
// guarded UPDATE … RETURNING), savepoints, value checks and error classes are
// those of sluice's SQL engine, [sluicesql], which every SQL adapter shares.
//
//	pool, err := pgxpool.New(ctx, "postgres://…")
//	sdb, err := sluicepgx.Open(ctx, pool, core.WithNaming(core.Naming{Preset: core.BetterAuth}))
//	limiter, err := ratelimit.New(ratelimit.Database(sdb))
//
// Statements run through pgx itself, with pgx's statement cache, tracer and
// type map, so a QueryTracer configured on the pool sees every one.
//
// To run sluice inside a transaction of your own, give New or Open the
// pgx.Tx: sluice's writes then commit or roll back with it, and a nested
// Transaction is a savepoint that an error rolls back alone. To bind, per
// request, an adapter made once to that request's transaction without asking
// the server again, use (*sluicesql.Adapter).WithExecutor with [Executor].
//
// Errors the server reports keep pgx's *pgconn.PgError in their chain
// (errors.As works). Unique-key conflicts satisfy errors.Is(err,
// core.ErrConflict) (Create detects them with ON CONFLICT DO NOTHING, so a
// surrounding transaction survives), and serialization failures and
// deadlocks that outlast the engine's retries core.ErrContention.
package sluicepgx
