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
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/gen"

	"github.com/sluice-go/sluice/core"
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
	ddl, _ := gen.DDL(core.MustSchema(core.Naming{}), gen.SQLite) // sluice's tables
	for _, q := range ddl {
		if _, err := db.ExecContext(ctx, q); err != nil {
			log.Fatal(err)
		}
	}

	sdb, err := sluicesql.Open(db, sluicesql.SQLite)
	if err != nil {
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
