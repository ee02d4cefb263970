package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// TestNamingPresets checks the physical names each preset gives to every
// field whose name has more than one word.
func TestNamingPresets(t *testing.T) {
	type names struct {
		rateLimit, apikey, alias string
		columns                  map[string]map[string]string // model → field → column
	}
	snake := names{"rate_limit", "apikey", "rerolled_key", map[string]map[string]string{
		core.ModelRateLimit: {"id": "id", "key": "key", "count": "count", "lastRequest": "last_request"},
		core.ModelAPIKey: {
			"configId": "config_id", "referenceId": "reference_id", "rateLimitEnabled": "rate_limit_enabled",
			"rateLimitTimeWindow": "rate_limit_time_window", "rateLimitMax": "rate_limit_max",
			"requestCount": "request_count", "refillInterval": "refill_interval", "refillAmount": "refill_amount",
			"lastRefillAt": "last_refill_at", "lastRequest": "last_request", "expiresAt": "expires_at",
			"createdAt": "created_at", "updatedAt": "updated_at", "key": "key", "start": "start",
		},
		core.ModelRerolledKey: {"key": "key", "keyId": "key_id", "expiresAt": "expires_at", "createdAt": "created_at"},
	}}
	betterAuth := names{"rateLimit", "apikey", "rerolledKey", map[string]map[string]string{
		core.ModelRateLimit: {"id": "id", "key": "key", "count": "count", "lastRequest": "lastRequest"},
		core.ModelAPIKey: {
			"configId": "configId", "referenceId": "referenceId", "rateLimitEnabled": "rateLimitEnabled",
			"rateLimitTimeWindow": "rateLimitTimeWindow", "lastRefillAt": "lastRefillAt", "lastRequest": "lastRequest",
			"expiresAt": "expiresAt", "createdAt": "createdAt", "updatedAt": "updatedAt",
		},
		core.ModelRerolledKey: {"key": "key", "keyId": "keyId", "expiresAt": "expiresAt", "createdAt": "createdAt"},
	}}
	cases := []struct {
		name   string
		naming core.Naming
		want   names
	}{
		{"zero value is snake_case", core.Naming{}, snake},
		{"SnakeCase", core.Naming{Preset: core.SnakeCase}, snake},
		{"BetterAuth", core.Naming{Preset: core.BetterAuth}, betterAuth},
		{"plural", core.Naming{Plural: true}, names{"rate_limits", "apikeys", "rerolled_keys", snake.columns}},
		{"BetterAuth plural", core.Naming{Preset: core.BetterAuth, Plural: true}, names{"rateLimits", "apikeys", "rerolledKeys", betterAuth.columns}},
		{"table override is not pluralised", core.Naming{Plural: true, Tables: map[string]string{core.ModelRateLimit: "limits"}},
			names{"limits", "apikeys", "rerolled_keys", snake.columns}},
		{"column overrides", core.Naming{Preset: core.BetterAuth, Columns: map[string]map[string]string{
			core.ModelRateLimit: {"key": "rl_key"},
			core.ModelAPIKey:    {"referenceId": "userId", "id": "key_id"},
		}}, names{"rateLimit", "apikey", "rerolledKey", map[string]map[string]string{
			core.ModelRateLimit: {"key": "rl_key", "count": "count", "lastRequest": "lastRequest"},
			core.ModelAPIKey:    {"referenceId": "userId", "id": "key_id", "configId": "configId"},
		}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := core.NewSchema(c.naming)
			if err != nil {
				t.Fatal(err)
			}
			for model, table := range map[string]string{core.ModelRateLimit: c.want.rateLimit, core.ModelAPIKey: c.want.apikey, core.ModelRerolledKey: c.want.alias} {
				tb, ok := s.Table(model)
				if !ok {
					t.Fatalf("no table for model %q", model)
				}
				if tb.Name != table || tb.Model != model {
					t.Errorf("model %q → table %q (model %q), want %q", model, tb.Name, tb.Model, table)
				}
				for field, column := range c.want.columns[model] {
					col, ok := tb.Column(field)
					if !ok || col.Name != column || col.Field.Name != field {
						t.Errorf("%s.%s → %q (ok=%v), want %q", model, field, col.Name, ok, column)
					}
					if back, ok := tb.ColumnByName(column); !ok || back.Field.Name != field {
						t.Errorf("ColumnByName(%q) = %q, %v; want field %q", column, back.Field.Name, ok, field)
					}
				}
				if pk := tb.PrimaryKey(); pk.Field.Name != "id" || !pk.Field.Primary {
					t.Errorf("%s primary key = %+v", model, pk)
				}
			}
			if got := s.Models(); len(got) != 5 || got[0] != core.ModelAPIKey || got[1] != core.ModelAPIKeyLimit || got[2] != core.ModelAPIKeyRefill || got[3] != core.ModelRateLimit || got[4] != core.ModelRerolledKey {
				t.Errorf("Models() = %v", got)
			}
		})
	}
}

// TestNamingExtraModelsSnakeCase covers the snake_case rule on names the
// built-in models do not have.
func TestNamingExtraModelsSnakeCase(t *testing.T) {
	fields := map[string]string{
		"userID":     "user_id",
		"HTTPServer": "http_server",
		"a1B":        "a1_b",
		"already_ok": "already_ok",
		"x":          "x",
		"ipV6Prefix": "ip_v6_prefix",
	}
	m := core.Model{Name: "sessionToken", Fields: []driver.Field{{Name: "id", Type: driver.TypeInt, Primary: true}}}
	for f := range fields {
		m.Fields = append(m.Fields, driver.Field{Name: f, Type: driver.TypeString, Nullable: true})
	}
	s, err := core.NewSchema(core.Naming{}, m)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := s.Table("sessionToken")
	if tb.Name != "session_token" {
		t.Errorf("table %q, want session_token", tb.Name)
	}
	for f, want := range fields {
		if c, _ := tb.Column(f); c.Name != want {
			t.Errorf("%q → %q, want %q", f, c.Name, want)
		}
	}
	if got := s.Tables(); len(got) != 6 || got[0].Model != core.ModelRateLimit || got[1].Model != core.ModelAPIKey || got[2].Model != core.ModelRerolledKey || got[3].Model != core.ModelAPIKeyLimit || got[4].Model != core.ModelAPIKeyRefill || got[5] != tb {
		t.Errorf("Tables() order: %v", got)
	}
	if !strings.Contains(s.String(), "session_token(id, ") {
		t.Errorf("String() = %q", s.String())
	}
}

// TestNamingErrors checks that every bad naming is refused with ErrInvalid
// and a message that names the problem.
func TestNamingErrors(t *testing.T) {
	long := strings.Repeat("a", 64)
	idField := driver.Field{Name: "id", Type: driver.TypeInt, Primary: true}
	cases := []struct {
		name   string
		naming core.Naming
		extra  []core.Model
		want   string
	}{
		{"table with a dash", core.Naming{Tables: map[string]string{core.ModelRateLimit: "rate-limit"}}, nil, `table name "rate-limit" is not a valid identifier`},
		{"table starting with a digit", core.Naming{Tables: map[string]string{core.ModelAPIKey: "1keys"}}, nil, `table name "1keys" is not a valid identifier`},
		{"table too long", core.Naming{Tables: map[string]string{core.ModelAPIKey: long}}, nil, "is not a valid identifier"},
		{"empty table override", core.Naming{Tables: map[string]string{core.ModelAPIKey: ""}}, nil, `table name "" is not a valid identifier`},
		{"quote in table", core.Naming{Tables: map[string]string{core.ModelAPIKey: `a"b`}}, nil, "is not a valid identifier"},
		{"column with a space", core.Naming{Columns: map[string]map[string]string{core.ModelRateLimit: {"key": "the key"}}}, nil, `column name "the key" for field "key" is not a valid identifier`},
		{"empty column override", core.Naming{Columns: map[string]map[string]string{core.ModelRateLimit: {"key": ""}}}, nil, `column name "" for field "key" is not a valid identifier`},
		{"non-ASCII column", core.Naming{Columns: map[string]map[string]string{core.ModelAPIKey: {"name": "nåme"}}}, nil, "is not a valid identifier"},
		{"duplicate table names", core.Naming{Tables: map[string]string{core.ModelAPIKey: "rate_limit"}}, nil, `table name "rate_limit" is already used by model "rateLimit"`},
		{"duplicate table names differing in case", core.Naming{Tables: map[string]string{core.ModelAPIKey: "Rate_Limit"}}, nil, "is already used"},
		{"duplicate table names after plural", core.Naming{Plural: true, Tables: map[string]string{core.ModelRateLimit: "apikeys"}}, nil, `table name "apikeys" is already used`},
		{"duplicate column names", core.Naming{Columns: map[string]map[string]string{core.ModelRateLimit: {"count": "key"}}}, nil, `fields "key" and "count" both map to column "key"`},
		{"duplicate column names differing in case", core.Naming{Preset: core.BetterAuth, Columns: map[string]map[string]string{core.ModelAPIKey: {"name": "LastRequest"}}}, nil, "both map to column"},
		{"table override for an unknown model", core.Naming{Tables: map[string]string{"session": "sessions"}}, nil, "table override for unknown model"},
		{"column override for an unknown model", core.Naming{Columns: map[string]map[string]string{"session": {"id": "sid"}}}, nil, "column override for unknown model"},
		{"column override for an unknown field", core.Naming{Columns: map[string]map[string]string{core.ModelRateLimit: {"hits": "h"}}}, nil, `column override for unknown field "hits"`},
		{"override by physical name", core.Naming{Columns: map[string]map[string]string{core.ModelRateLimit: {"last_request": "lr"}}}, nil, `unknown field "last_request"`},
		{"extra model redefines a built-in", core.Naming{}, []core.Model{core.RateLimitModel()}, "model defined twice"},
		{"extra model without a name", core.Naming{}, []core.Model{{Fields: []driver.Field{idField}}}, "model without a name"},
		{"extra model without a primary key", core.Naming{}, []core.Model{{Name: "m", Fields: []driver.Field{{Name: "a", Type: driver.TypeString}}}}, "the first field must be the integer primary key"},
		{"extra model with a string primary key", core.Naming{}, []core.Model{{Name: "m", Fields: []driver.Field{{Name: "id", Type: driver.TypeString, Primary: true}}}}, "the first field must be the integer primary key"},
		{"extra model with two primary keys", core.Naming{}, []core.Model{{Name: "m", Fields: []driver.Field{idField, {Name: "b", Type: driver.TypeInt, Primary: true}}}}, `field "b": only the first field may be the primary key`},
		{"extra model field without a type", core.Naming{}, []core.Model{{Name: "m", Fields: []driver.Field{idField, {Name: "b"}}}}, "field 1 has no name or an unknown type"},
		{"extra model with a default of the wrong type", core.Naming{}, []core.Model{{Name: "m", Fields: []driver.Field{idField, {Name: "b", Type: driver.TypeInt, Default: "0"}}}}, `field "b": the default "0" does not fit a int field`},
		{"extra model with an overflowing default", core.Naming{}, []core.Model{{Name: "m", Fields: []driver.Field{idField, {Name: "b", Type: driver.TypeInt, Default: uint64(1 << 63)}}}}, "does not fit"},
		{"extra model whose table clashes", core.Naming{}, []core.Model{{Name: "rate_limit", Fields: []driver.Field{idField}}}, "is already used"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := core.NewSchema(c.naming, c.extra...)
			if s != nil || !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("NewSchema = %v, %v; want ErrInvalid", s, err)
			}
			if !strings.HasPrefix(err.Error(), "sluice: NewSchema") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("message %q does not say %q", err, c.want)
			}
			if _, err := core.New(memory.New(), core.WithNaming(c.naming)); len(c.extra) == 0 && !errors.Is(err, core.ErrInvalid) {
				t.Errorf("New(WithNaming) err = %v, want ErrInvalid", err)
			}
			defer func() {
				if recover() == nil {
					t.Error("MustSchema did not panic")
				}
			}()
			core.MustSchema(c.naming, c.extra...)
		})
	}
}

// TestNamingReachesTheAdapter checks that DB speaks logical names to its
// caller and physical names to the adapter.
func TestNamingReachesTheAdapter(t *testing.T) {
	ctx := context.Background()
	naming := core.Naming{Preset: core.BetterAuth, Plural: true,
		Columns: map[string]map[string]string{core.ModelRateLimit: {"key": "rl_key"}}}
	m := memory.New()
	db := mustNew(t, m, core.WithNaming(naming))
	row := mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "a", "lastRequest": 7})
	if row.Text("key") != "a" || row.Int("lastRequest") != 7 || row.Int("id") == 0 {
		t.Errorf("Create returned %v", row)
	}
	tb, _ := db.Schema().Table(core.ModelRateLimit)
	if tb.Name != "rateLimits" {
		t.Fatalf("table %q", tb.Name)
	}
	rec, err := m.FindOne(ctx, tb, cols(core.Eq("rl_key", "a")))
	if err != nil || rec == nil {
		t.Fatalf("physical read: %v, %v", rec, err)
	}
	for _, col := range []string{"id", "rl_key", "count", "lastRequest"} {
		if _, ok := rec[col]; !ok {
			t.Errorf("stored record %v lacks column %q", rec, col)
		}
	}
	if _, ok := rec["key"]; ok {
		t.Errorf("stored record %v uses the logical name key", rec)
	}
	got, ok, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
		Where: []core.Where{core.Eq("key", "a")}, Increment: map[string]int64{"count": 2}})
	if err != nil || !ok || got.Int("count") != 2 || got.Text("key") != "a" {
		t.Errorf("IncrementOne = %v, %v, %v", got, ok, err)
	}
	rows, err := db.FindMany(ctx, core.ModelRateLimit, nil, &core.FindOptions{SortBy: "lastRequest"})
	if err != nil || len(rows) != 1 {
		t.Errorf("FindMany sorted by a logical field = %v, %v", rows, err)
	}
}

// TestCreateDefaults checks that Create fills in every default it has,
// nullable fields included, and leaves the rest NULL.
func TestCreateDefaults(t *testing.T) {
	at := fixedNow()
	m := core.Model{Name: "thing", Fields: []driver.Field{
		{Name: "id", Type: driver.TypeInt, Primary: true},
		{Name: "n", Type: driver.TypeInt, Nullable: true, Default: 7},
		{Name: "s", Type: driver.TypeString, Default: "dflt"},
		{Name: "b", Type: driver.TypeBool, Nullable: true, Default: false},
		{Name: "at", Type: driver.TypeTime, Nullable: true, Default: at},
		{Name: "free", Type: driver.TypeString, Nullable: true},
	}}
	db := mustNew(t, memory.New(), core.WithSchema(core.MustSchema(core.Naming{}, m)))
	row := mustCreate(t, db, "thing", nil)
	if row.Int("n") != 7 || row.Text("s") != "dflt" || row.IsNull("b") || row.Bool("b") ||
		!row.Time("at").Equal(at.Truncate(time.Millisecond)) || !row.IsNull("free") {
		t.Errorf("defaults: %v", row)
	}
	row = mustCreate(t, db, "thing", map[string]any{"n": nil, "s": "given"})
	if !row.IsNull("n") || row.Text("s") != "given" {
		t.Errorf("an explicit NULL or value must win over the default: %v", row)
	}
}

// TestSchemaWithout leaves the named models out of a copy, and a DB on it
// refuses them as unknown.
func TestSchemaWithout(t *testing.T) {
	s := core.MustSchema(core.Naming{})
	w := s.Without(core.ModelRerolledKey, core.ModelAPIKeyLimit, core.ModelAPIKeyRefill, "noSuchModel")
	if got := w.Models(); len(got) != 2 || got[0] != core.ModelAPIKey || got[1] != core.ModelRateLimit {
		t.Fatalf("Models() = %v, want apikey and rateLimit", got)
	}
	if len(s.Models()) != 5 {
		t.Fatalf("the original lost models: %v", s.Models())
	}
	db, err := core.New(memory.New(), core.WithSchema(w))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Count(context.Background(), core.ModelAPIKeyLimit); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Count on a model left out: err = %v, want ErrInvalid", err)
	}
}
