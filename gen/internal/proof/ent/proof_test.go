package ent_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/entc"
	entgen "entgo.io/ent/entc/gen"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
	"github.com/sluice-go/sluice/gen/internal/proof/ent"
	"github.com/sluice-go/sluice/gen/internal/proof/ent/apikey"
	"github.com/sluice-go/sluice/gen/internal/proof/ent/ratelimit"
	"github.com/sluice-go/sluice/gen/internal/testenv"
)

const pkg = "github.com/sluice-go/sluice/gen/internal/proof/ent"

// TestSchemaIsFresh checks that ./schema is what sluicegen writes now
// (go generate refreshes it).
func TestSchemaIsFresh(t *testing.T) {
	files, err := gen.Generate(gen.Config{Target: gen.Ent, Package: "schema"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join("schema", f.Name))
		if err != nil || !bytes.Equal(have, f.Data) {
			t.Errorf("schema/%s is stale (%v): run go generate in gen/internal/proof/ent", f.Name, err)
		}
	}
}

// TestEntCodegen runs ent's code generation on ./schema into a temporary
// folder and checks that it succeeds and writes exactly the client kept
// here, which this test imports and so proves to build.
func TestEntCodegen(t *testing.T) {
	if testing.Short() {
		t.Skip("ent code generation loads packages with the go command")
	}
	out := t.TempDir()
	if err := entc.Generate("./schema", &entgen.Config{Target: out, Package: pkg}); err != nil {
		t.Fatalf("ent rejected the generated schema: %v", err)
	}
	fresh := tree(t, out, nil)
	kept := tree(t, ".", func(rel string) bool {
		return strings.HasPrefix(rel, "schema/") || rel == "generate.go" || rel == "entc.go" || strings.HasSuffix(rel, "_test.go")
	})
	if strings.Join(sortedKeys(fresh), " ") != strings.Join(sortedKeys(kept), " ") {
		t.Fatalf("ent writes %v; kept here %v: run go generate", sortedKeys(fresh), sortedKeys(kept))
	}
	for name, data := range fresh {
		if !bytes.Equal(withoutVersion(data), withoutVersion(kept[name])) {
			t.Errorf("%s is stale: run go generate in gen/internal/proof/ent", name)
		}
	}
}

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
			var table *core.Table
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
			client := ent.NewClient(ent.Driver(entsql.OpenDB(entDialect[srv.Dialect], db)))

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

// withoutVersion drops the constants of runtime/runtime.go that record
// ent's version and module sum, which ent writes only when the build
// information has them: `go run` does, a test binary does not.
func withoutVersion(data []byte) []byte {
	if i := bytes.Index(data, []byte("\nconst (\n\tVersion")); i >= 0 {
		data = data[:i]
	}
	return bytes.TrimSpace(data)
}

// tree reads every file under root, keyed by slash path, except those skip accepts.
func tree(t *testing.T, root string, skip func(string) bool) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "tmpschema") || (skip != nil && skip(rel)) {
			return nil
		}
		data, err := os.ReadFile(path)
		files[rel] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
