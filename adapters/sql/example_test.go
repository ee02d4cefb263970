package sluicesql_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// A rate limiter on plain database/sql, here with SQLite.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sluice")
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", sluicesql.SQLiteDSN(filepath.Join(dir, "app.db")))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	sdb, err := sluicesql.Open(db, sluicesql.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	// sluice's tables, unless they exist: safe at every start.
	if err := sdb.CreateTables(ctx); err != nil {
		log.Fatal(err)
	}
	limiter, err := ratelimit.New(ratelimit.Database(sdb))
	if err != nil {
		log.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 2}
	for range 3 {
		d, err := limiter.Consume(ctx, "user:42", rule)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d.Allowed, d.Remaining)
	}
	// Output:
	// true 1
	// true 0
	// false 0
}

// CreateTables at every start: the first creates the tables, here with
// Better Auth's names, and a restart keeps them and their rows, so the
// rate-limit counter goes on where it was.
func ExampleAdapter_CreateTables() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sluice")
	defer os.RemoveAll(dir)
	dsn := sluicesql.SQLiteDSN(filepath.Join(dir, "app.db"))
	rule := ratelimit.Rule{Window: time.Minute, Max: 2}

	start := func() { // what a program does when it starts
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			log.Fatal(err)
		}
		defer db.Close()
		sdb, err := sluicesql.Open(db, sluicesql.SQLite, core.WithNaming(core.Naming{Preset: core.BetterAuth}))
		if err != nil {
			log.Fatal(err)
		}
		if err := sdb.CreateTables(ctx); err != nil {
			log.Fatal(err)
		}
		limiter, err := ratelimit.New(ratelimit.Database(sdb))
		if err != nil {
			log.Fatal(err)
		}
		d, err := limiter.Consume(ctx, "user:42", rule)
		if err != nil {
			log.Fatal(err)
		}
		t, _ := sdb.Schema().Table(core.ModelRateLimit)
		fmt.Println(t.Name, d.Allowed, d.Remaining)
	}
	start()
	start() // a restart
	start()
	// Output:
	// rateLimit true 1
	// rateLimit true 0
	// rateLimit false 0
}
