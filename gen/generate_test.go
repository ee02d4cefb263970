package gen

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
)

// TestGenerateErrors checks that every bad option fails with an error
// naming it, before anything is generated.
func TestGenerateErrors(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		want    string
		invalid bool // wraps core.ErrInvalid
	}{
		{"unknown target", Config{Target: "prisma", Dialect: SQLite}, `unknown target "prisma"`, false},
		{"unknown dialect", Config{Target: SQL, Dialect: "oracle"}, `unknown dialect "oracle"`, false},
		{"gorm needs a dialect", Config{Target: Gorm}, `unknown dialect ""`, false},
		{"unknown model", Config{Target: SQL, Dialect: SQLite, Models: []string{"user"}}, `unknown model "user" (want one of apikey, apikeyLimit, apikeyRefill, rateLimit, rerolledKey)`, false},
		{"model twice", Config{Target: SQL, Dialect: SQLite, Models: []string{"apikey", "apikey"}}, `model "apikey" listed twice`, false},
		{"bad package", Config{Target: Bun, Dialect: SQLite, Package: "my-models"}, `package name "my-models" is not a Go identifier`, false},
		{"keyword package", Config{Target: Ent, Package: "func"}, `package name "func"`, false},
		{"bad migration name", Config{Target: SQL, Dialect: SQLite, Migration: "../up"}, `migration name "../up"`, false},
		{"migration name with a newline", Config{Target: SQL, Dialect: SQLite, Migration: "up\nDROP TABLE apikey;"}, `migration name "up\nDROP TABLE apikey;"`, false},
		{"invalid table name", Config{Target: SQL, Dialect: SQLite, Naming: core.Naming{Tables: map[string]string{core.ModelRateLimit: "rate-limit"}}},
			`table name "rate-limit" is not a valid identifier`, true},
		{"duplicate table name", Config{Target: Ent, Naming: core.Naming{Tables: map[string]string{core.ModelRateLimit: "APIKEY"}}},
			`already used by model`, true},
		{"duplicate column name", Config{Target: Gorm, Dialect: MySQL, Naming: core.Naming{Columns: map[string]map[string]string{core.ModelRateLimit: {"count": "key"}}}},
			`both map to column "key"`, true},
		{"invalid column name", Config{Target: Gorm, Dialect: MySQL, Naming: core.Naming{Columns: map[string]map[string]string{core.ModelAPIKey: {"key": "1key"}}}},
			`column name "1key"`, true},
		{"override of an unknown field", Config{Target: SQL, Dialect: Postgres, Naming: core.Naming{Columns: map[string]map[string]string{core.ModelAPIKey: {"secret": "s"}}}},
			`unknown field "secret"`, true},
		{"override of an unknown model", Config{Target: SQL, Dialect: Postgres, Naming: core.Naming{Tables: map[string]string{"user": "users"}}},
			`table override for unknown model`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files, err := Generate(c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			if files != nil {
				t.Errorf("files generated despite the error: %d", len(files))
			}
			if errors.Is(err, core.ErrInvalid) != c.invalid {
				t.Errorf("errors.Is(err, core.ErrInvalid) = %v, want %v", !c.invalid, c.invalid)
			}
		})
	}
}

// TestModelsSelect checks that -models picks tables in schema order.
func TestModelsSelect(t *testing.T) {
	files := generateMap(t, Config{Target: Gorm, Dialect: Postgres, Models: []string{core.ModelAPIKey}})
	if len(files) != 1 || files["apikey.go"] == nil {
		t.Fatalf("files: %v", len(files))
	}
	sql := generateMap(t, Config{Target: SQL, Dialect: Postgres, Models: []string{core.ModelAPIKey, core.ModelRateLimit}})
	up := string(sql["0001_sluice.up.sql"])
	if strings.Index(up, `"rate_limit"`) > strings.Index(up, `"apikey"`) {
		t.Errorf("tables not in schema order:\n%s", up)
	}
	if strings.Contains(string(sql["0001_sluice.down.sql"]), "-models apikey,rateLimit") == false {
		t.Errorf("header does not record the models:\n%s", sql["0001_sluice.down.sql"])
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"ent", "gorm", "bun", "sql"} {
		if got, err := ParseTarget(s); err != nil || string(got) != s {
			t.Errorf("ParseTarget(%q) = %q, %v", s, got, err)
		}
	}
	for s, want := range map[string]core.Preset{"": core.SnakeCase, "snake": core.SnakeCase, "betterauth": core.BetterAuth, "better-auth": core.BetterAuth} {
		if got, err := ParsePreset(s); err != nil || got != want {
			t.Errorf("ParsePreset(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParsePreset("camel"); err == nil || !strings.Contains(err.Error(), `"camel"`) {
		t.Errorf("ParsePreset(camel): %v", err)
	}
}

func TestGoNames(t *testing.T) {
	for in, want := range map[string]string{
		"rateLimit": "RateLimit", "apikey": "APIKey", "configId": "ConfigID", "referenceId": "ReferenceID",
		"id": "ID", "rateLimitTimeWindow": "RateLimitTimeWindow", "userID": "UserID", "last_request": "LastRequest",
	} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"lastRequest": "last_request", "configId": "config_id", "userID": "user_id", "key": "key"} {
		if got := snakeName(in); got != want {
			t.Errorf("snakeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// generateMap is Generate as a map from file name to content.
func generateMap(t *testing.T, cfg Config) map[string][]byte {
	t.Helper()
	files, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, f := range files {
		m[f.Name] = f.Data
	}
	return m
}
