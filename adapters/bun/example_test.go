package sluicebun_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-go/sluice/adapters/bun"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/gen"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"
)

// openExampleDB opens a bun.DB on a fresh SQLite file with sluice's tables.
func openExampleDB(dir string) (*bun.DB, error) {
	sqldb, err := sql.Open("sqlite", sluicesql.SQLiteDSN(filepath.Join(dir, "app.db")))
	if err != nil {
		return nil, err
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	ddl, err := gen.DDL(core.MustSchema(core.Naming{}), gen.SQLite) // or your migrations
	if err != nil {
		return nil, err
	}
	for _, stmt := range ddl {
		if _, err := db.Exec(stmt); err != nil {
			return nil, err
		}
	}
	return db, nil
}

// Open a bun.DB, wrap it, and rate-limit requests: two per minute per key.
func Example() {
	dir, _ := os.MkdirTemp("", "sluicebun")
	defer os.RemoveAll(dir)
	bdb, err := openExampleDB(dir)
	if err != nil {
		panic(err)
	}
	defer bdb.Close()

	db, err := sluicebun.Open(bdb)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	limiter, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(func() time.Time { return now }))
	if err != nil {
		panic(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 2}
	for range 3 {
		d, err := limiter.Consume(context.Background(), "ip:203.0.113.7", rule)
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter, err)
	}
	// Output:
	// true 1 0s <nil>
	// true 0 0s <nil>
	// false 0 1m0s <nil>
}

// IncrementOne is a guarded counter update in one atomic write: here a
// counter that may not pass 2.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "sluicebun")
	defer os.RemoveAll(dir)
	bdb, err := openExampleDB(dir)
	if err != nil {
		panic(err)
	}
	defer bdb.Close()

	db, err := sluicebun.Open(bdb)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "user:42"}); err != nil {
		panic(err)
	}
	for range 3 {
		row, ok, err := db.IncrementOne(ctx, core.IncrementRequest{
			Model:     core.ModelRateLimit,
			Where:     []core.Where{core.Eq("key", "user:42"), core.Lt("count", 2)},
			Increment: map[string]int64{"count": 1},
		})
		fmt.Println(ok, row.Int("count"), err)
	}
	// Output:
	// true 1 <nil>
	// true 2 <nil>
	// false 0 <nil>
}
