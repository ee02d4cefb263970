package core

import (
	"context"
	"fmt"
)

// TableCreator is implemented by adapters that can create the tables they
// run on. CreateTables creates the tables and unique indexes of s that are
// missing: each missing table with every index the schema gives it. It
// leaves existing tables alone: it never alters or drops one, nor adds an
// index to one, so a table made by other DDL keeps its shape and its rows
// ([DB.CreateTables] reports what such a table lacks). It is safe to call
// at every start and from several processes at once: a process that finds
// a table created by another since it looked counts it as created.
type TableCreator interface {
	CreateTables(ctx context.Context, s *Schema) error
}

// CreateTables creates the tables of db's schema that do not exist yet,
// with their indexes, through the adapter's [TableCreator]; an existing
// table and its rows are left as they are. It then checks every table, the
// optional ones too, as [DB.CheckSchema] does, so that a table that existed before but lacks
// what exact decisions depend on (a column, the unique index on a key) is
// reported with [ErrSchema], naming what is missing and the fix, at start
// rather than at the first request. It is safe to call at every start and
// from several processes at once.
//
// An adapter without TableCreator makes it fail with [ErrUnsupported]:
// create the tables with your migrations instead (sluicegen writes them).
func (db *DB) CreateTables(ctx context.Context) error {
	const op = "CreateTables"
	if err := db.initialised(op, ""); err != nil {
		return err
	}
	tc, ok := db.adapter.(TableCreator)
	if !ok {
		return &Error{Op: op, Kind: ErrUnsupported,
			Err: fmt.Errorf("adapter %T cannot create tables (it does not implement core.TableCreator): create them with your migrations (sluicegen writes their DDL)", db.adapter)}
	}
	if err := tc.CreateTables(ctx, db.schema); err != nil {
		return wrap(op, "", err)
	}
	return db.checkSchema(ctx, op, db.schema.Models()) // the optional ones too: they exist now
}
