package sluicegorm_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	sluicegorm "github.com/sluice-go/sluice/adapters/gorm"
	"github.com/sluice-go/sluice/adapters/gorm/sqlitegorm"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/gen"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// openExample opens a fresh SQLite database in a temporary directory and
// creates sluice's tables; in an application the *gorm.DB is the one you
// already have, and the tables come from your migrations (see package gen).
func openExample() (*gorm.DB, func()) {
	dir, err := os.MkdirTemp("", "sluicegorm-example")
	if err != nil {
		log.Fatal(err)
	}
	gdb, err := sqlitegorm.Open(filepath.Join(dir, "app.db"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		log.Fatal(err)
	}
	ddl, err := gen.DDL(core.MustSchema(core.Naming{}), gen.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range ddl {
		if err := gdb.Exec(q).Error; err != nil {
			log.Fatal(err)
		}
	}
	return gdb, func() {
		if pool, err := gdb.DB(); err == nil {
			pool.Close()
		}
		os.RemoveAll(dir)
	}
}

// Open the database, wrap the *gorm.DB, and rate-limit requests: two per
// minute per client, the third is denied with the time to wait.
func Example() {
	gdb, done := openExample()
	defer done()

	db, err := sluicegorm.Open(gdb)
	if err != nil {
		log.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) // a fixed clock keeps the output stable
	limiter, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(func() time.Time { return now }))
	if err != nil {
		log.Fatal(err)
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

// IncrementOne is the primitive under the limiter: a guarded increment,
// applied in the database in one atomic statement, that reports "no match"
// instead of pushing a counter past its guard.
func Example_incrementOne() {
	gdb, done := openExample()
	defer done()

	db, err := sluicegorm.Open(gdb)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "job:42", "count": 0, "lastRequest": 0}); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		row, ok, err := db.IncrementOne(ctx, core.IncrementRequest{
			Model:     core.ModelRateLimit,
			Where:     []core.Where{core.Eq("key", "job:42"), core.Lt("count", 2)}, // selector and guard
			Increment: map[string]int64{"count": 1},
		})
		fmt.Println(ok, row.Int("count"), err)
	}
	// Output:
	// true 1 <nil>
	// true 2 <nil>
	// false 0 <nil>
}
