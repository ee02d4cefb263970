package sluiceent_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	sluiceent "github.com/sluice-go/sluice/adapters/ent"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/gen"
)

// openSQLite opens an ent driver on a new SQLite file in dir and creates
// sluice's tables (in an application: your migrations, or ent's).
func openSQLite(dir string) *entsql.Driver {
	db, err := sql.Open("sqlite", sluicesql.SQLiteDSN(filepath.Join(dir, "app.db")))
	if err != nil {
		log.Fatal(err)
	}
	drv := entsql.OpenDB(dialect.SQLite, db) // the driver you give ent.NewClient(ent.Driver(drv))
	ddl, err := gen.DDL(core.MustSchema(core.Naming{}), gen.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range ddl {
		if _, err := db.Exec(q); err != nil {
			log.Fatal(err)
		}
	}
	return drv
}

// Open the ent driver, wrap it, and rate-limit requests with it: two
// requests a minute per key, counted in the rate_limit table.
func Example() {
	dir, err := os.MkdirTemp("", "sluiceent")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	drv := openSQLite(dir)
	defer drv.Close()

	db, err := sluiceent.Open(drv)
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
		d, err := limiter.Consume(context.Background(), "203.0.113.7:/sign-in", rule)
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter, err)
	}
	// Output:
	// true 1 0s <nil>
	// true 0 0s <nil>
	// false 0 1m0s <nil>
}

// IncrementOne adds to a counter in the database, guarded: the row changes
// only while count < 2, and a request that finds no such row is a miss, not
// an error.
func ExampleAdapter_IncrementOne() {
	dir, err := os.MkdirTemp("", "sluiceent")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	drv := openSQLite(dir)
	defer drv.Close()
	db, err := sluiceent.Open(drv)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k", "count": 0}); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		row, ok, err := db.IncrementOne(ctx, core.IncrementRequest{
			Model:     core.ModelRateLimit,
			Where:     []core.Where{core.Eq("key", "k"), core.Lt("count", 2)},
			Increment: map[string]int64{"count": 1},
		})
		fmt.Println(ok, row.Int("count"), err)
	}
	// Output:
	// true 1 <nil>
	// true 2 <nil>
	// false 0 <nil>
}

// WithTx runs sluice in a transaction the application began on the ent
// driver: its writes commit or roll back with the application's.
func ExampleAdapter_WithTx() {
	dir, err := os.MkdirTemp("", "sluiceent")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	drv := openSQLite(dir)
	defer drv.Close()
	a, err := sluiceent.New(drv)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	tx, err := drv.Tx(ctx)
	if err != nil {
		log.Fatal(err)
	}
	txdb, err := core.New(a.WithTx(tx))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := txdb.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k"}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		log.Fatal(err)
	}
	db, _ := core.New(a)
	n, err := db.Count(ctx, core.ModelRateLimit)
	fmt.Println(n, err)
	// Output:
	// 0 <nil>
}
