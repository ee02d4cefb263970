package ent_test

import (
	"context"
	"strings"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/sluice-go/sluice/gen"
	"github.com/sluice-go/sluice/gen/internal/proof/ent"
	"github.com/sluice-go/sluice/gen/internal/testenv"
)

// entDialect is ent's name for each dialect.
var entDialect = map[gen.Dialect]string{gen.SQLite: dialect.SQLite, gen.Postgres: dialect.Postgres, gen.MySQL: dialect.MySQL}

// TestMigrateMatchesDDL lets ent's own migration create the tables from
// the generated schema, on SQLite and, when configured, PostgreSQL and
// MariaDB/MySQL, and checks that the result is the generated DDL's
// schema: the diff against it is empty.
func TestMigrateMatchesDDL(t *testing.T) {
	for _, srv := range testenv.Servers(t) {
		t.Run(string(srv.Dialect), func(t *testing.T) {
			ctx := context.Background()
			db := srv.Open(t)
			client := ent.NewClient(ent.Driver(entsql.OpenDB(entDialect[srv.Dialect], db)))
			if err := client.Schema.Create(ctx); err != nil {
				t.Fatal(err)
			}
			plan, err := gen.DiffDB(ctx, db, gen.Config{Dialect: srv.Dialect})
			if err != nil {
				t.Fatal(err)
			}
			if !plan.Empty() {
				t.Errorf("ent's tables differ from the schema:\n%s\n%s", strings.Join(plan.Statements, "\n"), strings.Join(plan.Left, "\n"))
			}
		})
	}
}
