package sluicepgx_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	sluicepgx "github.com/sluice-go/sluice/adapters/pgx"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/gen"
)

// exampleDB opens a pool on the PostgreSQL of SLUICE_POSTGRES_DSN and
// creates sluice's tables under names of this process's own (in an
// application: your migrations, and core.Naming{} for the default names).
// The examples need that server, so they carry no Output comment (go test
// would run them on a laptop without one): TestExamplesRun runs them and
// checks what they print when the server is configured.
func exampleDB(ctx context.Context) (*pgxpool.Pool, core.Naming, func()) {
	dsn := os.Getenv("SLUICE_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		log.Fatal(err)
	}
	naming := core.Naming{Tables: map[string]string{}}
	for _, m := range core.BuiltinModels() {
		naming.Tables[m.Name] = fmt.Sprintf("example_%s_%d", m.Name, randTag())
	}
	s := core.MustSchema(naming)
	ddl, err := gen.DDL(s, gen.Postgres)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range ddl {
		if _, err := pool.Exec(ctx, q); err != nil {
			log.Fatal(err)
		}
	}
	return pool, naming, func() {
		for _, q := range gen.DropDDL(s, gen.Postgres) {
			_, _ = pool.Exec(context.Background(), q)
		}
		pool.Close()
	}
}

// Open sluice on a pgx pool and rate-limit requests with it: two requests a
// minute per key, counted in the rate_limit table.
func Example() {
	ctx := context.Background()
	pool, naming, cleanup := exampleDB(ctx)
	defer cleanup()

	db, err := sluicepgx.Open(ctx, pool, core.WithNaming(naming))
	if err != nil {
		log.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	limiter, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(func() time.Time { return now }))
	if err != nil {
		log.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 2}
	for range 3 {
		d, err := limiter.Consume(ctx, "203.0.113.7:/sign-in", rule)
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter, err)
	}
	// Prints (TestExamplesRun checks it on a server):
	// true 1 0s <nil>
	// true 0 0s <nil>
	// false 0 1m0s <nil>
}

// Give Open a pgx.Tx of yours and sluice's writes commit or roll back with
// it: here the counter created in the transaction is gone after Rollback.
func Example_transaction() {
	ctx := context.Background()
	pool, naming, cleanup := exampleDB(ctx)
	defer cleanup()

	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	txdb, err := sluicepgx.Open(ctx, tx, core.WithNaming(naming))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := txdb.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k", "count": 0}); err != nil {
		log.Fatal(err)
	}
	n, err := txdb.Count(ctx, core.ModelRateLimit)
	fmt.Println("in the transaction:", n, err)
	if err := tx.Rollback(ctx); err != nil {
		log.Fatal(err)
	}

	db, err := sluicepgx.Open(ctx, pool, core.WithNaming(naming))
	if err != nil {
		log.Fatal(err)
	}
	n, err = db.Count(ctx, core.ModelRateLimit)
	fmt.Println("after the rollback:", n, err)
	// Prints (TestExamplesRun checks it on a server):
	// in the transaction: 1 <nil>
	// after the rollback: 0 <nil>
}

// randTag distinguishes this process's example tables from those of other
// test processes sharing the database server.
func randTag() int64 { return (time.Now().UnixNano()/1000 + int64(os.Getpid())*7919) % 1_000_000 }
