// Command quickstart is the complete program of docs/quickstart.md: sluice
// on gorm and PostgreSQL, a rate limit and an API key with a quota. Run it
// on an empty database:
//
//	DATABASE_URL='postgres://postgres@127.0.0.1:5432/mydb?sslmode=disable' go run .
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	sluicegorm "github.com/sluice-go/sluice/adapters/gorm"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

func main() {
	ctx := context.Background()
	gormDB, err := gorm.Open(postgres.Open(os.Getenv("DATABASE_URL")), &gorm.Config{})
	if err != nil {
		log.Fatal(err)
	}
	db, err := sluicegorm.Open(gormDB) // your *gorm.DB, or a transaction of yours
	if err != nil {
		log.Fatal(err)
	}
	// sluice's tables, unless they exist; sluicegen writes them as
	// migrations instead (see docs/schemas.md).
	err = db.CreateTables(ctx)
	if err != nil {
		log.Fatal(err)
	}

	// A rate limit: 3 requests a minute per key.
	limiter, err := ratelimit.New(ratelimit.Database(db))
	if err != nil {
		log.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 3}
	for i := 1; i <= 4; i++ {
		d, err := limiter.Consume(ctx, "user:42", rule)
		if err != nil { // a storage failure: d.Allowed follows the failure policy (closed by default)
			log.Fatal(err)
		}
		fmt.Printf("request %d: allowed=%t remaining=%d\n", i, d.Allowed, d.Remaining) // denied: d.RetryAfter, d.Reset
	}

	// An API key with a quota of 2 requests, verified 3 times.
	keys, err := apikey.New(db)
	if err != nil {
		log.Fatal(err)
	}
	quota := int64(2)
	plaintext, key, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42", Prefix: "sk_", Remaining: &quota})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("created a key for %s: %s… (only its hash is stored)\n", key.ReferenceID, key.Prefix)
	for i := 1; i <= 3; i++ {
		res, err := keys.Verify(ctx, plaintext)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("verify %d: valid=%t code=%q status=%d\n", i, res.Valid, res.Code, res.Status)
	}
}
