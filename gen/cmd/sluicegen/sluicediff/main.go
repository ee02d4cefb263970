// Command sluicediff is sluicegen with the database drivers its -dsn needs
// (pgx for PostgreSQL, go-sql-driver/mysql, modernc.org/sqlite): it reads
// an existing database and writes only what brings it to sluice's schema
// (missing tables, columns and indexes), never a destructive change, and
// reports on stderr what it left. Every other flag is sluicegen's.
//
// sluicegen itself links no driver, so that `go get -tool` of it adds none
// to your module. Run this one once, without adding it:
//
//	go run github.com/sluice-go/sluice/gen/cmd/sluicegen/sluicediff@latest -target sql -dialect postgres -dsn "$DATABASE_URL" -out migrations
package main

import (
	"database/sql"
	"io"

	"github.com/sluice-go/sluice/gen"
	"github.com/sluice-go/sluice/gen/cmd/sluicegen/internal/cli"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// driverNames are the database/sql drivers the command links in.
var driverNames = map[gen.Dialect]string{gen.Postgres: "pgx", gen.MySQL: "mysql", gen.SQLite: "sqlite"}

func open(d gen.Dialect, dsn string) (*sql.DB, error) { return sql.Open(driverNames[d], dsn) }

func main() { cli.Main(open) }

// run is the command as main runs it.
func run(args []string, stdout, stderr io.Writer) error { return cli.Run(args, stdout, stderr, open) }
