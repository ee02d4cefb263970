package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/gen"
)

// TestGoGenerateInFreshModule proves the //go:generate line the READMEs
// give works in a user's module: a fresh module requiring the generator
// (from the local folders, through replace lines) adds the command with
// `go get -tool`, which adds no database driver to its go.mod, and `go
// generate ./...` then writes models that build, and a migration. `go run github.com/…/sluicegen` would instead fail
// there with "updates to go.mod needed".
func TestGoGenerateInFreshModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go get, go generate and go build in a new module")
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(here, "..", "..", "..") // the repository: core, gen, adapters/sql (its ddl)
	dir := t.TempDir()
	gomod := "module example.com/app\n\ngo 1.26.0\n\n" +
		"require (\n" +
		"\tgithub.com/sluice-go/sluice/adapters/sql v0.0.0-00010101000000-000000000000\n" +
		"\tgithub.com/sluice-go/sluice/core v0.0.0-00010101000000-000000000000\n" +
		"\tgithub.com/sluice-go/sluice/gen v0.0.0-00010101000000-000000000000\n" +
		")\n\nreplace (\n" +
		"\tgithub.com/sluice-go/sluice/adapters/sql => " + filepath.Join(root, "adapters", "sql") + "\n" +
		"\tgithub.com/sluice-go/sluice/core => " + filepath.Join(root, "core") + "\n" +
		"\tgithub.com/sluice-go/sluice/gen => " + filepath.Join(root, "gen") + "\n" +
		"\tgithub.com/sluice-go/sluice/gen/cmd/sluicegen => " + here + "\n" +
		")\n"
	models := "// Package models holds the tables sluice uses, as gorm models.\npackage models\n\n" +
		"//go:generate go tool sluicegen -target gorm -dialect postgres -out . -package models\n" +
		"//go:generate go tool sluicegen -target sql -dialect sqlite -out ../migrations\n"
	// The command's go.sum holds the sums a user's go get would check with
	// the checksum database, which this test may not reach.
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.mod"), gomod)
	write(t, filepath.Join(dir, "go.sum"), string(sum))
	write(t, filepath.Join(dir, "models", "doc.go"), models)

	// Offline first, from the module cache, as a user would type it. If a
	// module is missing there, again through the configured proxy, naming
	// the version the replace line serves: the proxy knows no version of
	// the local command.
	goflags := "GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod")
	env := append(os.Environ(), "GOWORK=off", goflags)
	const tool = "github.com/sluice-go/sluice/gen/cmd/sluicegen"
	if out, err := goCmd(dir, append(env, "GOPROXY=off"), "get", "-tool", tool); err != nil {
		t.Logf("go get -tool with GOPROXY=off failed (%v), retrying through the proxy:\n%s", err, out)
		if out, err := goCmd(dir, env, "get", "-tool", tool+"@v0.0.0-00010101000000-000000000000"); err != nil {
			t.Fatalf("go get -tool: %v\n%s", err, out)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\ntool "+tool+"\n") {
		t.Fatalf("go get -tool added no tool line:\n%s", data)
	}
	// The drivers are sluicediff's: the tool brings none into the module.
	for _, driver := range []string{"github.com/jackc/pgx", "github.com/go-sql-driver/mysql", "modernc.org/sqlite"} {
		if strings.Contains(string(data), driver) {
			t.Errorf("go get -tool added the driver %s to the module:\n%s", driver, data)
		}
	}
	for _, args := range [][]string{{"generate", "./..."}, {"build", "./..."}, {"vet", "./..."}} {
		if out, err := goCmd(dir, env, args...); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for name, want := range map[string]gen.Config{
		"models":     {Target: gen.Gorm, Dialect: gen.Postgres, Package: "models"},
		"migrations": {Target: gen.SQL, Dialect: gen.SQLite},
	} {
		files, err := gen.Generate(want)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			got, err := os.ReadFile(filepath.Join(dir, name, f.Name))
			if err != nil || !bytes.Equal(got, f.Data) {
				t.Errorf("%s/%s: not what sluicegen writes (%v)", name, f.Name, err)
			}
		}
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goCmd runs the go command in dir with env and returns its output.
func goCmd(dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	return cmd.CombinedOutput()
}
