package ddl_test

import (
	"fmt"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core"
)

// The statements that create the rate-limit table on SQLite, as the
// engine's CreateTables runs them and sluicegen writes them.
func ExampleDialect_CreateTable() {
	s := core.MustSchema(core.Naming{})
	t, _ := s.Table(core.ModelRateLimit)
	stmts, err := ddl.SQLite.CreateTable(s.Tables(), t)
	if err != nil {
		panic(err)
	}
	for _, q := range stmts {
		fmt.Println(q)
	}
	// Output:
	// CREATE TABLE IF NOT EXISTS "rate_limit" (
	//   "id" INTEGER PRIMARY KEY AUTOINCREMENT,
	//   "key" TEXT NOT NULL,
	//   "count" INTEGER NOT NULL DEFAULT 0,
	//   "last_request" INTEGER NOT NULL DEFAULT 0
	// )
	// CREATE UNIQUE INDEX IF NOT EXISTS "rate_limit_key_key" ON "rate_limit" ("key")
	// CREATE INDEX IF NOT EXISTS "rate_limit_last_request_idx" ON "rate_limit" ("last_request")
}
