package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/examples/demo/server"
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestFlagsAndEnvironment(t *testing.T) {
	o, err := parseServe(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.addr != "127.0.0.1:8080" || o.cfg.ORM != server.ORMGorm || o.cfg.DB != server.DBSQLite || o.cfg.DSN != "" || o.cfg.Redis != "" {
		t.Errorf("defaults: %+v", o)
	}
	o, err = parseServe([]string{"-orm", "ent", "-addr", ":9000"},
		env(map[string]string{"SLUICE_DEMO_ORM": "bun", "SLUICE_DEMO_DB": "postgres", "SLUICE_DEMO_DSN": "postgres://x", "SLUICE_DEMO_REDIS": "r:6379"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.addr != ":9000" || o.cfg.ORM != "ent" || o.cfg.DB != "postgres" || o.cfg.DSN != "postgres://x" || o.cfg.Redis != "r:6379" {
		t.Errorf("flags over environment: %+v", o)
	}
	b, err := parseBurst([]string{"-n", "7", "-url", "http://h/hello", "-key", "k"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if b.n != 7 || b.url != "http://h/hello" || b.key != "k" {
		t.Errorf("burst flags: %+v", b)
	}
}

func TestLogLevel(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		env   string
		serve slog.Level // the server's level
		burst slog.Level // burst's, with the same arguments
	}{
		{nil, "", slog.LevelInfo, slog.LevelWarn},
		{nil, "debug", slog.LevelDebug, slog.LevelDebug},
		{[]string{"-log-level", "error"}, "debug", slog.LevelError, slog.LevelError},
		{[]string{"-log-level", "WARN"}, "", slog.LevelWarn, slog.LevelWarn},
	} {
		e := env(map[string]string{"SLUICE_DEMO_LOG_LEVEL": tc.env})
		o, err := parseServe(tc.args, e, io.Discard)
		if err != nil || o.level != tc.serve {
			t.Errorf("%q with SLUICE_DEMO_LOG_LEVEL=%q: level %v (error %v), want %v", tc.args, tc.env, o.level, err, tc.serve)
		}
		b, err := parseBurst(tc.args, e, io.Discard)
		if err != nil || b.level != tc.burst {
			t.Errorf("burst %q with SLUICE_DEMO_LOG_LEVEL=%q: level %v (error %v), want %v", tc.args, tc.env, b.level, err, tc.burst)
		}
	}
	if _, err := parseServe(nil, env(map[string]string{"SLUICE_DEMO_LOG_LEVEL": "loud"}), io.Discard); err == nil || !strings.Contains(err.Error(), "SLUICE_DEMO_LOG_LEVEL") {
		t.Errorf("a bad SLUICE_DEMO_LOG_LEVEL: error %v, want one naming it", err)
	}
	if _, err := parseServe([]string{"-log-level", "loud"}, env(nil), io.Discard); err == nil {
		t.Error("a bad -log-level: no error")
	}
}

func TestBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"burst", "-n", "0"}, "-n must be at least 1"},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
		{[]string{"-orm", "xorm"}, `unknown ORM "xorm"`},
		{[]string{"-db", "oracle"}, `unknown database "oracle"`},
		{[]string{"-db", "postgres"}, "needs a DSN"},
		{[]string{"-db", "mysql", "-dsn", "mysql://root:secret@127.0.0.1:3306/test"}, `user:pass@tcp(host:port)/db, such as root@tcp(127.0.0.1:3306)/test, not a URL (it starts with "mysql://")`},
		{[]string{"-db", "mariadb", "-dsn", "root@127.0.0.1:3306/test"}, "user:pass@tcp(host:port)/db"},
	} {
		err := run(context.Background(), tc.args, env(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	err := run(context.Background(), []string{"-orm", "xorm"}, env(nil), io.Discard)
	if !errors.Is(err, core.ErrInvalid) {
		t.Errorf("a bad configuration: %v, want core.ErrInvalid", err)
	}
	err = run(context.Background(), []string{"-db", "mysql", "-dsn", "mysql://root:secret@127.0.0.1:3306/test"}, env(nil), io.Discard)
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a MySQL URL: error %v, want one that does not repeat the password", err)
	}
}

// TestBurstCommand runs "demo burst" with no URL: it starts its own server
// on SQLite and reports exactly the limit admitted.
func TestBurstCommand(t *testing.T) {
	for _, orm := range server.ORMs {
		if orm == server.ORMPgx {
			continue // PostgreSQL only: TestEndToEnd covers it there
		}
		t.Run(orm, func(t *testing.T) {
			var out strings.Builder
			if err := run(context.Background(), []string{"burst", "-n", "40", "-orm", orm}, env(nil), &out); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"started " + orm + " on sqlite", "admitted 5 of 40 (limit 5), 35 denied with 429, 0 failed", "exact:"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
