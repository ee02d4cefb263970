package core

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core/driver"
)

// CreateTables creates the tables of db's schema that do not exist yet,
// with their indexes, through the adapter's [driver.TableCreator]; an existing
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
	tc, ok := db.adapter.(driver.TableCreator)
	if !ok {
		return &Error{Op: op, Kind: ErrUnsupported,
			Err: fmt.Errorf("adapter %T cannot create tables (it does not implement driver.TableCreator): create them with your migrations (sluicegen writes their DDL)", db.adapter)}
	}
	if err := tc.CreateTables(ctx, db.schema.Tables()); err != nil {
		return wrap(op, "", err)
	}
	return db.checkSchema(ctx, op, db.schema.Models()) // the optional ones too: they exist now
}
