package sluicesql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// openExampleDB opens a fresh SQLite database with sluice's tables and an
// orders table standing for the application's own.
func openExampleDB(dir string) (*sql.DB, *core.DB) {
	db, err := sql.Open("sqlite", sluicesql.SQLiteDSN(filepath.Join(dir, "app.db")))
	if err != nil {
		log.Fatal(err)
	}
	sdb, err := sluicesql.Open(db, sluicesql.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	if err := sdb.CreateTables(context.Background()); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	return db, sdb
}

// A request's charge and its business write commit together: the handler
// begins a transaction, writes the order, charges the limiter on the same
// *sql.Tx with limiter.In(tx), and commits only when the charge was
// admitted. A rollback, here of an order that failed after its charge,
// refunds the charge.
func ExampleAdapter_BindTx() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sluice")
	defer os.RemoveAll(dir)
	db, sdb := openExampleDB(dir)
	defer db.Close()
	limiter, err := ratelimit.New(ratelimit.Database(sdb))
	if err != nil {
		log.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 2}

	order := func(item string, fail bool) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // a no-op once committed
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (item) VALUES (?)`, item); err != nil {
			return err
		}
		d, err := limiter.In(tx).Consume(ctx, "user:42", rule)
		switch {
		case err != nil:
			return err
		case !d.Allowed:
			return fmt.Errorf("rate limited, %d left", d.Remaining)
		case fail:
			return errors.New("payment declined") // the rollback refunds the charge
		}
		return tx.Commit()
	}
	fmt.Println(order("tea", false))
	fmt.Println(order("cake", true))
	fmt.Println(order("coffee", false))
	fmt.Println(order("scone", false))

	var n int
	_ = db.QueryRow(`SELECT COUNT(*) FROM orders`).Scan(&n)
	fmt.Println(n, "orders")

	// A transaction already ended is refused, and nothing is charged.
	tx, _ := db.BeginTx(ctx, nil)
	_ = tx.Commit()
	_, err = limiter.In(tx).Consume(ctx, "user:42", rule)
	fmt.Println(errors.Is(err, core.ErrInvalid))
	// Output:
	// <nil>
	// payment declined
	// <nil>
	// rate limited, 0 left
	// 2 orders
	// true
}

// An API key's quota spent in the caller's transaction: keys.In(tx)
// verifies on the *sql.Tx, and the rollback of a failed request gives the
// unit back.
func ExampleAdapter_BindTx_apiKey() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sluice")
	defer os.RemoveAll(dir)
	db, sdb := openExampleDB(dir)
	defer db.Close()
	keys, err := apikey.New(sdb)
	if err != nil {
		log.Fatal(err)
	}
	quota := int64(10)
	secret, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user:42", Remaining: &quota})
	if err != nil {
		log.Fatal(err)
	}
	for _, commit := range []bool{true, false} {
		tx, _ := db.BeginTx(ctx, nil)
		res, err := keys.In(tx).Verify(ctx, secret)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Valid, *res.Key.Remaining)
		if commit {
			_ = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
	}
	res, _ := keys.Verify(ctx, secret, apikey.Cost(0))
	fmt.Println("left:", *res.Key.Remaining)
	// Output:
	// true 9
	// true 8
	// left: 9
}
