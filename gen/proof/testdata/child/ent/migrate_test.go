package ent_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/gen"
	"github.com/sluice-go/sluice/gen/proof/testenv"

	"example.com/sluiceproof/ent"
)

// newClient opens the generated client on db, of dialect d.
func newClient(t *testing.T, d gen.Dialect, db *sql.DB) *ent.Client {
	t.Helper()
	drv, err := testenv.EntDriver(d, db)
	if err != nil {
		t.Fatal(err)
	}
	return ent.NewClient(ent.Driver(drv))
}

// TestMigrateMatchesDDL lets ent's own migration create the tables from
// the generated schema, on SQLite and, when configured, PostgreSQL and
// MariaDB/MySQL, and checks that the result is the generated DDL's
// schema: the diff against it is empty, except on MySQL for the collation
// of the four unique keys. ent gives every MySQL table utf8mb4_bin, which
// pads, and its schema cannot name a collation both MySQL (utf8mb4_0900_bin)
// and MariaDB (utf8mb4_nopad_bin) know, so the diff tells the user how to
// convert them.
func TestMigrateMatchesDDL(t *testing.T) {
	for _, srv := range testenv.Servers(t) {
		t.Run(string(srv.Dialect), func(t *testing.T) {
			ctx := context.Background()
			db := srv.Open(t)
			client := newClient(t, srv.Dialect, db)
			if err := client.Schema.Create(ctx); err != nil {
				t.Fatal(err)
			}
			plan, err := gen.DiffDB(ctx, db, gen.Config{Dialect: srv.Dialect})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if srv.Dialect == gen.MySQL {
				for _, table := range []string{"rate_limit", "apikey", "rerolled_key", "apikey_limit"} {
					want = append(want, "column "+table+".key has collation utf8mb4_bin, not a binary NO PAD one")
				}
			}
			ok := len(plan.Statements) == 0 && len(plan.Left) == len(want)
			for i := 0; ok && i < len(want); i++ {
				ok = strings.HasPrefix(plan.Left[i], want[i])
			}
			if !ok {
				t.Errorf("ent's tables differ from the schema:\n%s\n%s\nwant only notes starting:\n%s",
					strings.Join(plan.Statements, "\n"), strings.Join(plan.Left, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
