package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
	"github.com/sluice-go/sluice/gen/cmd/sluicegen/internal/cli"
)

// TestGenerateFlags checks that the flags reach the generator: the files
// written are those gen.Generate returns for the same options.
func TestGenerateFlags(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run([]string{"-target", "bun", "-dialect", "mysql", "-out", dir, "-package", "db", "-models", "rateLimit",
		"-preset", "betterauth", "-plural", "-table", "rateLimit=limits", "-column", "rateLimit.count=hits"}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	want, err := gen.Generate(gen.Config{Target: gen.Bun, Dialect: gen.MySQL, Package: "db", Models: []string{"rateLimit"},
		Naming: core.Naming{Preset: core.BetterAuth, Plural: true, Tables: map[string]string{"rateLimit": "limits"},
			Columns: map[string]map[string]string{"rateLimit": {"count": "hits"}}}})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(want) {
		t.Fatalf("%d files written, want %d", len(entries), len(want))
	}
	for _, f := range want {
		got, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("%s differs (%v)", f.Name, err)
		}
	}
	if !bytes.Contains(want[0].Data, []byte("`bun:\"hits,notnull,default:0,type:BIGINT\"`")) || !bytes.Contains(want[0].Data, []byte("table:limits")) {
		t.Errorf("overrides not applied:\n%s", want[0].Data)
	}
}

// TestUsageErrors checks that bad flags fail with a message naming them.
func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"-target", "prisma"}, `unknown target "prisma"`, true},
		{[]string{"-target", "sql", "-dialect", "oracle"}, `unknown dialect "oracle"`, true},
		{[]string{"-target", "gorm"}, `unknown dialect ""`, true},
		{[]string{"-target", "ent", "-preset", "camel"}, `unknown naming preset "camel"`, true},
		{[]string{"-target", "ent", "-table", "rateLimit"}, `-table "rateLimit": want model=name`, true},
		{[]string{"-target", "ent", "-column", "count=hits"}, `-column "count=hits": want model.field=name`, true},
		{[]string{"-target", "ent", "-table", "apikey=a", "-table", "apikey=b"}, `overridden twice`, true},
		{[]string{"-target", "gorm", "-dialect", "sqlite", "-dsn", "file:x.db"}, `-dsn diffs a database and needs -target sql`, true},
		{[]string{"-target", "ent", "extra"}, `unexpected argument "extra"`, true},
		{[]string{"-target", "ent", "-models", "user"}, `unknown model "user"`, false},
		{[]string{"-target", "ent", "-table", "rateLimit=apikey"}, `already used by model`, false},
		{[]string{"-target", "sql", "-dialect", "sqlite", "-column", "apikey.key=select-key"}, `"select-key" for field "key" is not a valid identifier`, false},
	}
	for _, c := range cases {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		err := run(append(c.args, "-out", dir), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
			continue
		}
		if errors.Is(err, cli.ErrUsage) != c.usage {
			t.Errorf("%v: usage error = %v, want %v", c.args, !c.usage, c.usage)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v: %d files written despite the error", c.args, len(entries))
		}
	}
}

// TestDSNNeedsSluicediff checks that sluicegen, which links no driver,
// refuses -dsn with the command that has them, before touching anything.
func TestDSNNeedsSluicediff(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run([]string{"-target", "sql", "-dialect", "sqlite", "-dsn", "file:" + filepath.Join(dir, "app.db"), "-out", dir}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), cli.DiffCommand+"@latest") {
		t.Fatalf("err = %v, want one naming %s", err, cli.DiffCommand)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d files written despite the error", len(entries))
	}
}

// TestMain runs the command itself when the usage test re-executes this
// binary with SLUICEGEN_MAIN set, so that main's exit status is tested.
func TestMain(m *testing.M) {
	if os.Getenv("SLUICEGEN_MAIN") == "1" {
		os.Args = append([]string{"sluicegen"}, strings.Fields(os.Getenv("SLUICEGEN_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestUsage runs the command with no arguments, with an unknown flag and
// with -h: each prints the usage (targets, flags, an example) on stderr
// and nothing on stdout, and exits 2, 2 and 0.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args   string
		status int
		extra  string
	}{
		{"", 2, ""},
		{"-nosuchflag", 2, "flag provided but not defined: -nosuchflag"},
		{"-h", 0, ""},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SLUICEGEN_MAIN=1", "SLUICEGEN_ARGS="+c.args)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		status := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			status = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if status != c.status {
			t.Errorf("sluicegen %s: exit status %d, want %d\n%s", c.args, status, c.status, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("sluicegen %s: wrote to stdout: %q", c.args, stdout.String())
		}
		for _, want := range []string{"usage: sluicegen -target ent|gorm|bun|sql", "-dialect", "-dsn", "-preset",
			"sluicegen -target gorm -dialect postgres -out . -package models", "//go:generate go tool sluicegen", c.extra} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("sluicegen %s: stderr lacks %q:\n%s", c.args, want, stderr.String())
			}
		}
		if strings.Contains(stderr.String(), "unknown target") {
			t.Errorf("sluicegen %s: stderr reports a target error instead of the usage:\n%s", c.args, stderr.String())
		}
	}
}
