package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// models are the tables sluice uses, the required ones first.
var models = []string{core.ModelRateLimit, core.ModelAPIKey, core.ModelRerolledKey, core.ModelAPIKeyLimit, core.ModelAPIKeyRefill}

func schemaCheck(ctx context.Context, c *cli, args []string) error {
	if _, err := c.parse(flag.NewFlagSet("schema check", flag.ContinueOnError), args, 0, ""); err != nil {
		return err
	}
	db, err := c.open()
	if err != nil {
		return err
	}
	type result struct {
		Model string `json:"model"`
		Table string `json:"table"`
		OK    bool   `json:"ok"`
		Error string `json:"error,omitempty"`
	}
	var results []result
	var failed error
	for _, m := range models {
		t, _ := db.Schema().Table(m)
		r := result{Model: m, Table: t.Name, OK: true}
		if err := db.CheckSchema(ctx, m); err != nil {
			r.OK, r.Error = false, oneLine(err)
			if failed == nil {
				failed = fmt.Errorf("table %s (%s): %w", t.Name, m, err)
			}
		}
		results = append(results, r)
	}
	if c.json {
		if err := c.printJSON(results); err != nil {
			return err
		}
	} else {
		tb := newTable(c.out, "MODEL", "TABLE", "STATUS")
		for _, r := range results {
			status := "ok"
			if !r.OK {
				status = r.Error
			}
			tb.row(r.Model, r.Table, status)
		}
		if err := tb.flush(); err != nil {
			return err
		}
	}
	return failed
}

func schemaCreate(ctx context.Context, c *cli, args []string) error {
	if _, err := c.parse(flag.NewFlagSet("schema create", flag.ContinueOnError), args, 0, ""); err != nil {
		return err
	}
	db, err := c.open()
	if err != nil {
		return err
	}
	if err := db.CreateTables(ctx); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"success": true})
	}
	fmt.Fprintln(c.out, "tables created where missing, and checked")
	return nil
}

// schemaDiff prints what would bring the database to sluice's schema: the
// statements, and the differences it would not fix. It only reads.
func schemaDiff(ctx context.Context, c *cli, args []string) error {
	if _, err := c.parse(flag.NewFlagSet("schema diff", flag.ContinueOnError), args, 0, ""); err != nil {
		return err
	}
	if _, err := c.open(); err != nil {
		return err
	}
	naming, _ := c.naming()
	plan, err := gen.DiffDB(ctx, c.pool, gen.Config{Dialect: drivers[c.driver].gen, Naming: naming})
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"statements": nonNil(plan.Statements), "left": nonNil(plan.Left)})
	}
	if plan.Empty() {
		fmt.Fprintln(c.out, "-- the database matches the schema")
		return nil
	}
	for _, l := range plan.Left {
		fmt.Fprintln(c.out, "-- left:", l)
	}
	for _, s := range plan.Statements {
		fmt.Fprintln(c.out, s+";")
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
