// Package ent_test is copied, with the ent schema sluicegen writes and the
// client ent's code generation makes of it, into a module the proof test
// builds: it proves that ent accepts the schema (for every naming), that
// the client builds, that ent's migration yields the generated DDL's
// schema and that rows round-trip on tables created from that DDL.
package ent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/entc"
	entgen "entgo.io/ent/entc/gen"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
	"github.com/sluice-go/sluice/gen/proof/testenv"

	"example.com/sluiceproof/ent/apikey"
	"example.com/sluiceproof/ent/ratelimit"
)

// pkg is the import path of the client ent generated here.
const pkg = "example.com/sluiceproof/ent"

// TestEntAcceptsEveryNaming loads the schema generated with each naming
// through ent's loader and checks the tables, columns and indexes ent
// will use.
func TestEntAcceptsEveryNaming(t *testing.T) {
	if testing.Short() {
		t.Skip("ent's loader runs the go command")
	}
	for _, naming := range []core.Naming{
		{Preset: core.BetterAuth},
		{Plural: true, Tables: map[string]string{core.ModelAPIKey: "api_keys"},
			Columns: map[string]map[string]string{core.ModelRateLimit: {"id": "rl_id", "key": "rl_key"}}},
	} {
		// ent loads the schema as a package of this module, so it must
		// live inside it; the folder is removed afterwards.
		dir, err := os.MkdirTemp(".", "tmpschema")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		cfg := gen.Config{Target: gen.Ent, Package: "schema", Naming: naming}
		files, err := gen.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := gen.WriteFiles(dir, files); err != nil {
			t.Fatal(err)
		}
		graph, err := entc.LoadGraph("./"+filepath.Base(dir), &entgen.Config{Package: pkg})
		if err != nil {
			t.Fatalf("ent rejected the schema for %+v: %v", naming, err)
		}
		s, _ := cfg.Schema()
		for _, n := range graph.Nodes {
			var table *driver.Table
			for _, tb := range s.Tables() {
				if strings.EqualFold(tb.Model, n.Name) {
					table = tb
				}
			}
			if table == nil {
				t.Fatalf("ent node %s matches no model", n.Name)
			}
			if n.Table() != table.Name {
				t.Errorf("%s: ent table %q, want %q", n.Name, n.Table(), table.Name)
			}
			var cols []string
			cols = append(cols, n.ID.StorageKey())
			for _, f := range n.Fields {
				cols = append(cols, f.StorageKey())
			}
			if strings.Join(cols, ",") != strings.Join(table.ColumnNames(), ",") {
				t.Errorf("%s: ent columns %v, want %v", n.Name, cols, table.ColumnNames())
			}
			var indexes int
			for _, c := range table.Columns {
				if c.Field.Unique || c.Field.Index {
					indexes++
				}
			}
			if len(n.Indexes) != indexes {
				t.Errorf("%s: %d ent indexes, want %d", n.Name, len(n.Indexes), indexes)
			}
		}
	}
}

// TestRoundTrip writes and reads rows through the generated ent client on
// tables created from the generated DDL, on every configured server.
func TestRoundTrip(t *testing.T) {
	for _, srv := range testenv.Servers(t) {
		t.Run(string(srv.Dialect), func(t *testing.T) {
			ctx := context.Background()
			db := srv.Open(t)
			stmts, err := gen.DDL(core.MustSchema(core.Naming{}), srv.Dialect)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range stmts {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			client := newClient(t, srv.Dialect, db)

			rl, err := client.RateLimit.Create().SetKey("ip:1").SetCount(3).SetLastRequest(1700000000123).Save(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := client.RateLimit.Query().Where(ratelimit.Key("ip:1")).Only(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != rl.ID || got.Count != 3 || got.LastRequest != 1700000000123 {
				t.Errorf("rate limit read back as %+v", got)
			}
			if _, err := client.RateLimit.Create().SetKey("ip:1").Save(ctx); err == nil {
				t.Error("a second row with the same key was accepted")
			}

			created := time.Date(2024, 5, 6, 7, 8, 9, 123_000_000, time.UTC)
			remaining := int64(10)
			k, err := client.APIKey.Create().SetKey("hash").SetReferenceID("user-1").SetNillableRemaining(&remaining).
				SetCreatedAt(created).SetUpdatedAt(created).SetEnabled(false).Save(ctx)
			if err != nil {
				t.Fatal(err)
			}
			back, err := client.APIKey.Query().Where(apikey.ID(k.ID)).Only(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if back.ConfigID != "default" || back.Enabled || !back.RateLimitEnabled || back.RequestCount != 0 ||
				back.Remaining == nil || *back.Remaining != 10 || back.ExpiresAt != nil || back.Name != nil ||
				!back.CreatedAt.Equal(created) || back.ReferenceID != "user-1" {
				t.Errorf("api key read back as %+v", back)
			}
		})
	}
}
