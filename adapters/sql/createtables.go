package sluicesql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

var _ driver.TableCreator = (*Adapter)(nil)

// createAttempts bounds how often CreateTables looks again after losing a
// race to another process creating the same table. One more look always
// suffices against other CreateTables calls (each creates its tables in
// one transaction on PostgreSQL and SQLite, one statement per table on
// MySQL); the rest are for other DDL running at the same time.
const createAttempts = 4

// CreateTables implements [driver.TableCreator]: it creates the tables of s
// that do not exist yet, each with its indexes, with the statements
// sluicegen writes (package ddl), and leaves an existing table as it
// is: no ALTER, no DROP, no index added to it. A table made by other DDL
// that lacks a column or the unique index on a key is reported by
// core.DB.CreateTables, which runs [Adapter.CheckSchema] afterwards.
//
// The statements run through the adapter's executor, so an ORM's hooks and
// logger see them. On PostgreSQL and SQLite every missing table and index
// is created in one transaction (a savepoint inside a transaction of the
// caller's): two processes starting together cannot leave a table without
// its unique index. On MySQL and MariaDB, where DDL commits at once, each
// table is one CREATE TABLE IF NOT EXISTS holding its indexes; inside a
// caller's transaction, which such a statement would commit, it creates
// nothing and fails with core.ErrUnsupported when a table is missing.
//
// A process that loses the race to create a table ("already exists", or
// PostgreSQL's duplicate key in its catalog) looks again and counts a
// table that now exists as created, so every process starting at once
// succeeds.
func (a *Adapter) CreateTables(ctx context.Context, tables []*driver.Table) error {
	if slices.Contains(tables, nil) {
		return fmt.Errorf("%w: %s: CreateTables with a nil table", driver.ErrInvalid, a.e.name())
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err := a.createMissing(ctx, tables)
		if err == nil || ctx.Err() != nil {
			return err
		}
		switch {
		case a.e.lostRace(err) && attempt < createAttempts-1:
			continue // the winner has committed: the next look finds its table
		case a.e.classify(err) != retryable:
			return err
		case a.inTx:
			return fmt.Errorf("%w: %w", core.ErrContention, err)
		case !a.e.again(attempt, start):
			return fmt.Errorf("%w: creating tables: gave up after %d attempts: %w", core.ErrContention, attempt+1, err)
		}
		if werr := pause(ctx, attempt); werr != nil {
			return fmt.Errorf("%w: %w (while waiting to retry: %w)", core.ErrContention, err, werr)
		}
	}
}

// createMissing makes one pass: it looks which tables are missing and
// creates them.
func (a *Adapter) createMissing(ctx context.Context, tables []*driver.Table) error {
	if a.e.t.ddlCommits {
		return a.createMySQL(ctx, tables)
	}
	return a.inTransaction(ctx, func(tx *Adapter) error {
		for _, t := range tables {
			if err := tx.createTable(ctx, tables, t); err != nil {
				return err
			}
		}
		return nil
	})
}

// createMySQL creates each missing table in one statement of its own: MySQL
// commits every DDL statement at once, so a transaction would not hold
// them together, and CREATE TABLE IF NOT EXISTS with its keys inline
// leaves no moment when a table exists without its unique index.
func (a *Adapter) createMySQL(ctx context.Context, tables []*driver.Table) error {
	var missing []string
	for _, t := range tables {
		ok, err := a.tableExists(ctx, t)
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, t.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if a.inTx {
		return fmt.Errorf("%w: %s: CreateTables inside a transaction on MySQL: CREATE TABLE would commit the transaction "+
			"(MySQL commits DDL implicitly); call it on the pool, outside any transaction (tables missing: %s)",
			core.ErrUnsupported, a.e.name(), strings.Join(missing, ", "))
	}
	for _, t := range tables {
		if err := a.createTable(ctx, tables, t); err != nil {
			return err
		}
	}
	return nil
}

// createTable runs the DDL's statements for t when t does not exist.
func (a *Adapter) createTable(ctx context.Context, tables []*driver.Table, t *driver.Table) error {
	ok, err := a.tableExists(ctx, t)
	if err != nil || ok {
		return err
	}
	stmts, err := ddl.Dialect(a.e.features.Dialect.String()).CreateTable(tables, t)
	if err != nil {
		return fmt.Errorf("%s: %w", a.e.name(), err)
	}
	for _, q := range stmts {
		if _, err := a.x.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: creating table %q (model %s): %w; the statement was:\n%s", a.e.name(), t.Name, t.Model, err, q)
		}
	}
	return nil
}

// tableExists reports whether t's table exists, where the engine's
// unqualified statements will find it: on PostgreSQL anywhere on the
// search_path, on MySQL in the current database.
func (a *Adapter) tableExists(ctx context.Context, t *driver.Table) (bool, error) {
	b := a.catalogQuery(a.e.t.catalog.tableExists, t)
	n, err := a.scalar(ctx, b.sb.String(), b.args)
	if err != nil {
		return false, fmt.Errorf("%s: looking for table %q: %w", a.e.name(), t.Name, a.e.mapErr(err))
	}
	return n > 0, nil
}

// lostRace reports whether err is what a CREATE returns when another
// session created the same table or index since this one looked:
// PostgreSQL's duplicate_table or duplicate_object, or the duplicate key
// in its catalog that a CREATE waiting on the other's uncommitted table
// gets once that commits; MySQL's table exists or duplicate key name;
// SQLite's "already exists".
func (e *engine) lostRace(err error) bool {
	c, fam, ok := e.code(err)
	cl := classes[fam]
	return (ok && slices.Contains(cl.createRace, c)) || (cl.createRaceText != "" && strings.Contains(err.Error(), cl.createRaceText))
}
