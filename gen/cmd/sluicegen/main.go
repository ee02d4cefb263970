// Command sluicegen writes sluice's schema for an ORM or as SQL: ent schema
// files, gorm or bun model structs, or DDL with an up/down migration pair.
// With -dsn it reads an existing database instead and writes only what
// brings it to the schema (missing tables, columns and indexes), reporting
// on stderr what it left; a name read from the database that is not a
// plain identifier is shown quoted, with Go escapes.
//
// It is a module of its own, so that the generator library
// (github.com/sluice-go/sluice/gen) needs no database driver. Add it to
// your module as a tool, then run it from //go:generate lines:
//
//	go get -tool github.com/sluice-go/sluice/gen/cmd/sluicegen
//
//	//go:generate go tool sluicegen -target gorm -dialect postgres -out . -package models
//
// or once, to sync an existing database, through its twin sluicediff, which
// links the PostgreSQL, MySQL and SQLite drivers that sluicegen leaves out
// (so that adding sluicegen as a tool adds no driver to your go.mod):
//
//	go run github.com/sluice-go/sluice/gen/cmd/sluicegen/sluicediff@latest -target sql -dialect mysql -dsn 'root@tcp(127.0.0.1:3306)/app' -out migrations
//
// (`go run github.com/sluice-go/sluice/gen/cmd/sluicegen` works only in a
// module that already requires it and all its dependencies.) Without
// arguments it prints its usage and exits with status 2.
//
// Flags:
//
//	-target ent|gorm|bun|sql   what to write (required)
//	-dialect postgres|mysql|sqlite   column types (required except for ent)
//	-out DIR          output folder (default "."); with -dsn, "-" writes the script to stdout
//	-package NAME     Go package (default "schema" for ent, "models" for gorm and bun)
//	-models LIST      comma-separated logical models, e.g. rateLimit,apikey (default all: rateLimit,apikey,rerolledKey,apikeyLimit,apikeyRefill)
//	-preset snake|betterauth   naming preset (default snake)
//	-plural           plural table names
//	-table model=name          table override (repeatable)
//	-column model.field=name   column override (repeatable)
//	-migration NAME   base name of the migration pair (default 0001_sluice)
//	-dsn DSN          diff against this database (target sql only; sluicediff only)
//	-diff-file NAME   file name of the diff script (default sluice_diff.sql)
package main

import (
	"io"

	"github.com/sluice-go/sluice/gen/cmd/sluicegen/internal/cli"
)

func main() { cli.Main(nil) }

// run is the command without a database driver, as main runs it.
func run(args []string, stdout, stderr io.Writer) error { return cli.Run(args, stdout, stderr, nil) }
