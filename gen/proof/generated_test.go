package proof_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/gen"
)

// childModule is the module path of the generated code; the templates in
// testdata/child import its packages by it.
const childModule = "example.com/sluiceproof"

// TestGeneratedORMCode generates the gorm and bun models of every dialect
// and the ent schema into a fresh module, runs ent's code generation on
// that schema, then vets the module and runs the tests of testdata/child
// in it: the models and the ent client must compile, ent's and gorm's
// migrations must yield the generated DDL's schema and rows must
// round-trip, on SQLite and, when configured, PostgreSQL and MariaDB/MySQL.
func TestGeneratedORMCode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of generated ORM code with the go command")
	}
	dir := t.TempDir()
	writeChildModule(t, dir)
	for _, target := range []gen.Target{gen.Gorm, gen.Bun} {
		for _, d := range []gen.Dialect{gen.SQLite, gen.Postgres, gen.MySQL} {
			generate(t, filepath.Join(dir, string(target), string(d)), gen.Config{Target: target, Dialect: d, Package: string(target) + string(d)})
		}
	}
	generate(t, filepath.Join(dir, "ent", "schema"), gen.Config{Target: gen.Ent, Package: "schema"})

	goCommand(t, dir, "run", "entc.go")
	for _, f := range []string{"client.go", "apikey/where.go", "migrate/schema.go"} {
		if _, err := os.Stat(filepath.Join(dir, "ent", f)); err != nil {
			t.Fatalf("ent's code generation wrote no %s: %v", f, err)
		}
	}
	goCommand(t, dir, "vet", "./...")
	out := goCommand(t, dir, "test", "-count=1", "-v", "./...")
	// Every package of tests must have run, none skipped as empty.
	for _, pkg := range []string{childModule + "/ent", childModule + "/orm"} {
		if !strings.Contains(out, "ok  \t"+pkg+"\t") {
			t.Errorf("no passing test run of %s in:\n%s", pkg, out)
		}
	}
	for _, test := range []string{"TestMigrateMatchesDDL", "TestRoundTrip", "TestEntAcceptsEveryNaming"} {
		if !strings.Contains(out, "--- PASS: "+test+" ") {
			t.Errorf("%s did not pass in:\n%s", test, out)
		}
	}
}

// writeChildModule copies testdata/child into dir and makes it a module
// requiring this one, gen, core and the SQL engine from their folders, with this module's
// go.sum, so that it builds offline from the module cache.
func writeChildModule(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join("testdata", "child"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(filepath.Join("testdata", "child"), path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	proof, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module " + childModule + "\n\ngo 1.26.0\n\nrequire (\n"
	for _, m := range []string{"adapters/sql", "core", "gen", "gen/proof"} {
		gomod += "\tgithub.com/sluice-go/sluice/" + m + " v0.0.0-00010101000000-000000000000\n"
	}
	gomod += ")\n\nreplace (\n" +
		"\tgithub.com/sluice-go/sluice/adapters/sql => " + filepath.Join(proof, "..", "..", "adapters", "sql") + "\n" +
		"\tgithub.com/sluice-go/sluice/core => " + filepath.Join(proof, "..", "..", "core") + "\n" +
		"\tgithub.com/sluice-go/sluice/gen => " + filepath.Join(proof, "..") + "\n" +
		"\tgithub.com/sluice-go/sluice/gen/proof => " + proof + "\n)\n"
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
}

// generate writes what gen.Generate makes of cfg into dir.
func generate(t *testing.T, dir string, cfg gen.Config) {
	t.Helper()
	files, err := gen.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
}

// goCommand runs the go command in dir outside any workspace, letting it
// add the ORM modules the generated code imports to go.mod (at the
// versions this module pins), and returns its output, failing the test
// with that output when the command fails.
func goCommand(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s in the generated module: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("go %s:\n%s", strings.Join(args, " "), out.String())
	return out.String()
}
