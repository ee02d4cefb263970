package main_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// bin is the command, built once for every test.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-cmd")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "sluice")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("building the command: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// target is a database the command runs against, with tables of its own.
type target struct {
	driver, dsn, tables string
	db                  *core.DB // the same database opened in the test, to check from Go
}

func targets(t *testing.T) map[string]func(t *testing.T) target {
	return map[string]func(t *testing.T) target{
		"sqlite": func(t *testing.T) target {
			path := filepath.Join(t.TempDir(), "app.db")
			return open(t, "sqlite", "sqlite", sluicesql.SQLite, path, sluicesql.SQLiteDSN(path))
		},
		"postgres": func(t *testing.T) target {
			dsn := adaptertest.PostgresDSN(t)
			return open(t, "postgres", "pgx", sluicesql.Postgres, dsn, dsn)
		},
		"mariadb": func(t *testing.T) target {
			dsn := adaptertest.MySQLDSN(t)
			return open(t, "mysql", "mysql", sluicesql.MySQL, dsn, dsn)
		},
	}
}

func open(t *testing.T, driver, sqlDriver string, d sluicesql.Dialect, dsn, sqlDSN string) target {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	s := hex.EncodeToString(b)
	naming := core.Naming{Tables: map[string]string{
		core.ModelRateLimit: "cmd_rate_limit_" + s, core.ModelAPIKey: "cmd_apikey_" + s,
		core.ModelRerolledKey: "cmd_rerolled_" + s, core.ModelAPIKeyLimit: "cmd_apikey_limit_" + s,
		core.ModelAPIKeyRefill: "cmd_apikey_refill_" + s,
	}}
	var tables []string
	for m, tb := range naming.Tables {
		tables = append(tables, m+"="+tb)
	}
	pool, err := sql.Open(sqlDriver, sqlDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, tb := range naming.Tables {
			if _, err := pool.Exec("DROP TABLE IF EXISTS " + tb); err != nil {
				t.Errorf("dropping %s: %v", tb, err)
			}
		}
		pool.Close()
	})
	db, err := sluicesql.Open(pool, d, core.WithNaming(naming))
	if err != nil {
		t.Fatal(err)
	}
	return target{driver: driver, dsn: dsn, tables: strings.Join(tables, ","), db: db}
}

// result is one run of the command.
type result struct {
	code           int
	stdout, stderr string
}

// sluice runs the command with the target in its environment.
func (tg target) sluice(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SLUICE_DRIVER="+tg.driver, "SLUICE_DSN="+tg.dsn, "SLUICE_TABLES="+tg.tables)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d: %s%s", r.code, r.stderr, r.stdout)
	}
	return r
}

// fails checks a failure: the exit code, and one line naming the reason.
func (r result) fails(t *testing.T, code int, reason string) {
	t.Helper()
	first, _, _ := strings.Cut(r.stderr, "\n")
	if r.code != code || !strings.HasPrefix(first, "sluice: ") || !strings.Contains(first, reason) {
		t.Errorf("exit %d, stderr %q; want exit %d and one line naming %q", r.code, r.stderr, code, reason)
	}
	if code == 1 && strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("a failure in %d lines: %q", strings.Count(r.stderr, "\n"), r.stderr)
	}
}

func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("%v in %s", err, r.stdout)
	}
	return m
}

// TestCommand runs the command through a key's life, and its schema and
// limits commands, on each database, checking each change from Go.
func TestCommand(t *testing.T) {
	for name, mk := range targets(t) {
		t.Run(name, func(t *testing.T) {
			tg := mk(t)
			ctx := context.Background()
			diff := tg.sluice(t, "schema", "diff").ok(t)
			if !strings.Contains(diff.stdout, "CREATE TABLE") {
				t.Errorf("schema diff of an empty database: %s", diff.stdout)
			}
			tg.sluice(t, "schema", "check").fails(t, 1, "does not exist")
			tg.sluice(t, "schema", "create").ok(t)
			check := tg.sluice(t, "schema", "check", "-json").ok(t)
			if strings.Count(check.stdout, `"ok": true`) != 5 { // the five built-in models
				t.Errorf("schema check after create: %s", check.stdout)
			}
			if d := tg.sluice(t, "schema", "diff").ok(t); !strings.Contains(d.stdout, "matches") {
				t.Errorf("schema diff after create: %s", d.stdout)
			}

			created := tg.sluice(t, "keys", "create", "-owner", "u1", "-name", "ci key", "-prefix", "sk_", "-remaining", "3",
				"-rate-limit", "off", "-permission", "data:read,write", "-json").ok(t).json(t)
			secret, id := created["key"].(string), int64(created["id"].(float64))
			if _, has := created["hash"]; has || !strings.HasPrefix(secret, "sk_") {
				t.Fatalf("created %v", created)
			}
			keys, err := apikey.New(tg.db)
			if err != nil {
				t.Fatal(err)
			}
			r, err := keys.Verify(ctx, secret, apikey.Permissions(map[string][]string{"data": {"write"}}))
			if err != nil || !r.Valid || r.Key.ID != id {
				t.Fatalf("the command's key from Go: %+v, %v", r, err)
			}

			goSecret, goKey, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "u2", Name: "from go"})
			if err != nil {
				t.Fatal(err)
			}
			list := tg.sluice(t, "keys", "list").ok(t)
			if !strings.Contains(list.stdout, "ci key") || !strings.Contains(list.stdout, "from go") || strings.Contains(list.stdout, goSecret) {
				t.Errorf("keys list:\n%s", list.stdout)
			}
			page := tg.sluice(t, "keys", "list", "-owner", "u2", "-json").ok(t).json(t)
			if ks := page["apiKeys"].([]any); len(ks) != 1 || ks[0].(map[string]any)["id"] != float64(goKey.ID) {
				t.Errorf("keys list -owner u2: %v", page)
			}
			show := tg.sluice(t, "keys", "show", strconv.FormatInt(id, 10)).ok(t)
			if !regexp.MustCompile(`(?m)^remaining +2$`).MatchString(show.stdout) || strings.Contains(show.stdout, secret) || strings.Contains(show.stdout, keystore.Hash(secret)) {
				t.Errorf("keys show:\n%s", show.stdout)
			}

			tg.sluice(t, "keys", "update", strconv.FormatInt(id, 10), "-disable").ok(t)
			if r, _ := keys.Verify(ctx, secret); r.Code != apikey.CodeDisabled {
				t.Errorf("disabled by the command, Go sees %+v", r)
			}
			tg.sluice(t, "keys", "update", strconv.FormatInt(id, 10), "-enable", "-remaining", "10").ok(t)
			rr := tg.sluice(t, "keys", "reroll", strconv.FormatInt(id, 10), "-json").ok(t).json(t)
			fresh := rr["key"].(string)
			if r, _ := keys.Verify(ctx, secret); r.Code != apikey.CodeInvalid {
				t.Errorf("the old secret after reroll: %+v", r)
			}
			if r, _ := keys.Verify(ctx, fresh); !r.Valid || r.Key.Remaining == nil || *r.Key.Remaining != 9 {
				t.Errorf("the new secret: %+v", r)
			}
			tg.sluice(t, "keys", "revoke", strconv.FormatInt(id, 10)).ok(t)
			if r, _ := keys.Verify(ctx, fresh); r.Code != apikey.CodeInvalid {
				t.Errorf("a revoked key verifies: %+v", r)
			}
			tg.sluice(t, "keys", "revoke", strconv.FormatInt(id, 10)).fails(t, 1, "no key")
			tg.sluice(t, "keys", "show", strconv.FormatInt(id, 10)).fails(t, 1, "not found")
			tg.sluice(t, "keys", "create", "-owner", "u", "-remaining", "-1").fails(t, 1, "Remaining -1 is negative")

			lim, err := ratelimit.New(ratelimit.Database(tg.db))
			if err != nil {
				t.Fatal(err)
			}
			defer lim.Close()
			rule := ratelimit.Rule{Max: 5, Window: 10 * time.Second}
			for range 2 {
				if _, err := lim.Consume(ctx, "203.0.113.7", rule); err != nil {
					t.Fatal(err)
				}
			}
			st := tg.sluice(t, "limits", "show", "-rule", "5/10s", "203.0.113.7", "-json").ok(t).json(t)
			if st["remaining"] != 3.0 {
				t.Errorf("limits show: %v", st)
			}
			tg.sluice(t, "limits", "reset", "-rule", "5/10s", "203.0.113.7").ok(t)
			if d, _ := lim.Check(ctx, "203.0.113.7", rule); d.Remaining != 5 {
				t.Errorf("after limits reset: %+v", d)
			}
			daily, err := ratelimit.ParseRule("3/day@Europe/Berlin")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := lim.Consume(ctx, "daily-client", daily); err != nil {
				t.Fatal(err)
			}
			st = tg.sluice(t, "limits", "show", "-rule", "3/day@Europe/Berlin", "daily-client", "-json").ok(t).json(t)
			if st["remaining"] != 2.0 || st["calendar"] != "day@Europe/Berlin" {
				t.Errorf("limits show of a calendar rule: %v", st)
			}
			tg.sluice(t, "limits", "reset", "-rule", "3/day@Europe/Berlin", "daily-client").ok(t)
			if d, _ := lim.Check(ctx, "daily-client", daily); d.Remaining != 3 {
				t.Errorf("after limits reset of a calendar rule: %+v", d)
			}
		})
	}
}

// TestCommandUsage: a call the command cannot make sense of exits 2 with
// a line saying why, before opening anything.
func TestCommandUsage(t *testing.T) {
	tg := target{driver: "sqlite", dsn: filepath.Join(t.TempDir(), "none.db")}
	for _, c := range []struct {
		args   []string
		reason string
	}{
		{[]string{"keys", "bogus"}, `unknown command "keys" "bogus"`},
		{[]string{"frob"}, `unknown command "frob"`},
		{[]string{"keys", "show"}, "needs a key id"},
		{[]string{"keys", "show", "x"}, `key id "x"`},
		{[]string{"keys", "create"}, "needs -owner"},
		{[]string{"keys", "create", "-owner", "u", "-rate-limit", "lots"}, "MAX/WINDOW"},
		{[]string{"keys", "update", "1", "-enable", "-disable"}, "exclude each other"},
		{[]string{"keys", "list", "-enabled", "perhaps"}, "-enabled"},
		{[]string{"limits", "show", "k"}, "needs -rule"},
		{[]string{"-driver", "oracle", "keys", "list"}, `-driver "oracle"`},
		{[]string{"-dsn", "", "keys", "list"}, "no database"},
	} {
		tg.sluice(t, c.args...).fails(t, 2, c.reason)
	}
	if _, err := os.Stat(tg.dsn); !os.IsNotExist(err) {
		t.Errorf("a usage error opened the database: %v", err)
	}
	if r := tg.sluice(t, "-h"); r.code != 2 || !strings.Contains(r.stderr, "keys create") {
		t.Errorf("-h: %d %s", r.code, r.stderr)
	}
}
