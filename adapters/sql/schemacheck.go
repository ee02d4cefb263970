package sluicesql

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// CheckSchema reports, with core.ErrSchema, a table that lacks what exact
// decisions depend on: the table itself, a column of the model, a unique
// index on each field the
// schema marks Unique (on that column alone, without a predicate), and, on
// MySQL, a collation that tells keys apart when they differ only by
// trailing spaces (PAD SPACE collations such as utf8mb4_bin do not).
func (a *Adapter) CheckSchema(ctx context.Context, t *driver.Table) error {
	var need []string
	for _, c := range t.Columns {
		if c.Field.Unique {
			need = append(need, c.Name)
		}
	}
	uniq, err := a.uniqueColumns(ctx, t)
	if err != nil {
		return err
	}
	if uniq == nil {
		return fmt.Errorf("%w: table %q (model %s) does not exist: create it (core.DB.CreateTables does, or sluicegen writes its DDL)", core.ErrSchema, t.Name, t.Model)
	}
	if err := a.checkColumns(ctx, t); err != nil {
		return err
	}
	for _, col := range need {
		if !uniq[col] {
			return fmt.Errorf("%w: table %q has no unique index on column %q alone: without it two concurrent "+
				"first requests can each insert a row for the same key; create it (sluicegen writes it)", core.ErrSchema, t.Name, col)
		}
	}
	if a.e.t.padsKeys {
		for _, col := range need {
			if err := a.checkNoPad(ctx, t, col); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkColumns refuses a table that lacks a column of the model: made by
// other DDL, or before the model had the field. Nothing would work on it
// (every statement names every column), and CreateTables leaves an
// existing table as it is, so the error names the missing column and how
// to add it.
func (a *Adapter) checkColumns(ctx context.Context, t *driver.Table) error {
	b := a.catalogQuery(a.e.t.catalog.columns, t)
	have, err := a.nameSet(ctx, b, "col")
	if err != nil {
		return err
	}
	folds := a.e.t.foldsNames
	if folds {
		for name := range have {
			have[strings.ToLower(name)] = true
		}
	}
	for _, c := range t.Columns {
		name := c.Name
		if folds {
			name = strings.ToLower(name)
		}
		if !have[name] {
			return fmt.Errorf("%w: table %q (model %s) has no column %q (field %s): the table was made by other DDL "+
				"or an older schema, and CreateTables leaves an existing table as it is; add the column (go tool "+
				"sluicegen -target sql -dsn … writes the ALTER TABLE), or drop the table if it holds nothing you "+
				"need and call CreateTables again",
				core.ErrSchema, t.Name, t.Model, c.Name, c.Field.Name)
		}
	}
	return nil
}

// uniqueColumns returns the columns of t that have a unique index of their
// own, or nil when the table does not exist.
func (a *Adapter) uniqueColumns(ctx context.Context, t *driver.Table) (map[string]bool, error) {
	ok, err := a.tableExists(ctx, t)
	if err != nil || !ok {
		return nil, err
	}
	return a.nameSet(ctx, a.catalogQuery(a.e.t.catalog.uniques, t), "col")
}

func (a *Adapter) nameSet(ctx context.Context, b *builder, col string) (map[string]bool, error) {
	recs, err := a.query(ctx, b.sb.String(), b.args)
	if err != nil {
		return nil, a.e.mapErr(err)
	}
	out := map[string]bool{}
	for _, r := range recs {
		for name := range splitNames(r[col]) {
			out[name] = true
		}
	}
	return out, nil
}

// splitNames reads a comma-separated list of names from text or bytes.
func splitNames(v any) map[string]bool {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case []byte:
		s = string(x)
	}
	out := map[string]bool{}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out[s[start:i]] = true
			}
			start = i + 1
		}
	}
	return out
}

var collationName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// checkNoPad refuses a key column whose collation ignores trailing spaces:
// under it "k" and "k " are one key, and share one counter.
func (a *Adapter) checkNoPad(ctx context.Context, t *driver.Table, col string) error {
	b := a.newBuilder()
	b.write(`SELECT CHARACTER_SET_NAME AS cs, COLLATION_NAME AS co FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = `)
	b.arg(t.Name)
	b.write(` AND COLUMN_NAME = `)
	b.arg(col)
	rec, err := a.queryOne(ctx, b.sb.String(), b.args)
	if err != nil || rec == nil {
		return a.e.mapErr(err)
	}
	cs, co := text(rec["cs"]), text(rec["co"])
	if cs == "" || co == "" { // a binary column compares bytes, without padding
		return nil
	}
	if !collationName.MatchString(cs) || !collationName.MatchString(co) {
		return fmt.Errorf("%w: column %q of %q has an unexpected collation %q", core.ErrSchema, col, t.Name, co)
	}
	pads, err := a.scalar(ctx, "SELECT CONVERT('k' USING "+cs+") COLLATE "+co+" = CONVERT('k ' USING "+cs+") COLLATE "+co, nil)
	if err != nil {
		return a.e.mapErr(err)
	}
	if pads != 0 {
		return fmt.Errorf("%w: column %q of %q uses collation %s, which ignores trailing spaces, so keys "+
			"\"k\" and \"k \" would share one row; use a NO PAD collation (utf8mb4_nopad_bin on MariaDB, "+
			"utf8mb4_0900_bin on MySQL 8; sluicegen writes it)", core.ErrSchema, col, t.Name, co)
	}
	return nil
}

func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// catalogQuery is one of the dialect's catalog questions about t.
func (a *Adapter) catalogQuery(q catalogQuery, t *driver.Table) *builder {
	b := a.newBuilder()
	b.write(q.pre)
	name := t.Name
	if a.e.t.catalog.regclass {
		name = b.t.quoted(name)
	}
	b.arg(name)
	b.write(q.post)
	return b
}
