package testenv

import (
	"database/sql"
	"fmt"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/entc"
	entgen "entgo.io/ent/entc/gen"
	gormsqlite "github.com/libtnb/sqlite"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/schema"
	gormmysql "gorm.io/driver/mysql"
	gormpostgres "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/sluice-go/sluice/gen"
)

// The ORM helpers live here, outside the tests, so that this module
// requires every ORM and the code generated at test time builds offline
// against the versions (and go.sum) pinned here.

// OpenGorm opens gorm on db with the dialector of d, logging nothing.
func OpenGorm(d gen.Dialect, db *sql.DB) (*gorm.DB, error) {
	var dialector gorm.Dialector
	switch d {
	case gen.Postgres:
		dialector = gormpostgres.New(gormpostgres.Config{Conn: db})
	case gen.MySQL:
		dialector = gormmysql.New(gormmysql.Config{Conn: db})
	case gen.SQLite:
		// libtnb/sqlite: gorm.io/driver/sqlite's dialect for the pure-Go
		// modernc.org/sqlite driver, the one sluicegorm/sqlitegorm uses;
		// gorm.io/driver/sqlite would link mattn/go-sqlite3 and need cgo.
		dialector = gormsqlite.New(gormsqlite.Config{DriverName: "sqlite", Conn: db})
	default:
		return nil, fmt.Errorf("testenv: no gorm dialector for dialect %q", d)
	}
	return gorm.Open(dialector, &gorm.Config{Logger: logger.Discard})
}

// OpenBun opens bun on db with the dialect of d.
func OpenBun(d gen.Dialect, db *sql.DB) (*bun.DB, error) {
	var bd schema.Dialect
	switch d {
	case gen.Postgres:
		bd = pgdialect.New()
	case gen.MySQL:
		bd = mysqldialect.New()
	case gen.SQLite:
		bd = sqlitedialect.New()
	default:
		return nil, fmt.Errorf("testenv: no bun dialect for dialect %q", d)
	}
	return bun.NewDB(db, bd), nil
}

// EntDriver returns an ent driver of dialect d on db, for the NewClient
// of a generated ent client (ent.Driver(EntDriver(d, db))).
func EntDriver(d gen.Dialect, db *sql.DB) (*entsql.Driver, error) {
	names := map[gen.Dialect]string{gen.SQLite: dialect.SQLite, gen.Postgres: dialect.Postgres, gen.MySQL: dialect.MySQL}
	name, ok := names[d]
	if !ok {
		return nil, fmt.Errorf("testenv: no ent dialect for dialect %q", d)
	}
	return entsql.OpenDB(name, db), nil
}

// GenerateEnt runs ent's code generation, as `ent generate` would, on the
// schema package in schemaDir, writing the client for import path pkg
// into target. Paths are relative to the working directory, which must be
// inside the module holding the schema: ent loads it with the go command.
func GenerateEnt(schemaDir, target, pkg string) error {
	return entc.Generate(schemaDir, &entgen.Config{Target: target, Package: pkg})
}
