// Package orm_test is copied, with the gorm and bun models sluicegen
// writes for each dialect, into a module the proof test builds: it proves
// that the models compile, that the ORM's own migration from their tags
// yields the generated DDL's schema, and that they round-trip rows on
// tables created from that DDL, on SQLite and, when configured,
// PostgreSQL and MariaDB/MySQL.
package orm_test

import (
	"context"
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"gorm.io/gorm"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
	"github.com/sluice-go/sluice/gen/proof/testenv"

	bunmysql "example.com/sluiceproof/bun/mysql"
	bunpostgres "example.com/sluiceproof/bun/postgres"
	bunsqlite "example.com/sluiceproof/bun/sqlite"
	gormmodelmysql "example.com/sluiceproof/gorm/mysql"
	gormmodelpostgres "example.com/sluiceproof/gorm/postgres"
	gormmodelsqlite "example.com/sluiceproof/gorm/sqlite"
)

// modelSet is one generated package: its ORM, dialect, and constructors
// for its five models.
type modelSet struct {
	target      gen.Target
	dialect     gen.Dialect
	rateLimit   func() any
	apiKey      func() any
	rerolled    func() any
	apikeyLimit func() any
	refill      func() any
}

var sets = []modelSet{
	{gen.Gorm, gen.SQLite, func() any { return new(gormmodelsqlite.RateLimit) }, func() any { return new(gormmodelsqlite.APIKey) }, func() any { return new(gormmodelsqlite.RerolledKey) }, func() any { return new(gormmodelsqlite.APIKeyLimit) }, func() any { return new(gormmodelsqlite.APIKeyRefill) }},
	{gen.Gorm, gen.Postgres, func() any { return new(gormmodelpostgres.RateLimit) }, func() any { return new(gormmodelpostgres.APIKey) }, func() any { return new(gormmodelpostgres.RerolledKey) }, func() any { return new(gormmodelpostgres.APIKeyLimit) }, func() any { return new(gormmodelpostgres.APIKeyRefill) }},
	{gen.Gorm, gen.MySQL, func() any { return new(gormmodelmysql.RateLimit) }, func() any { return new(gormmodelmysql.APIKey) }, func() any { return new(gormmodelmysql.RerolledKey) }, func() any { return new(gormmodelmysql.APIKeyLimit) }, func() any { return new(gormmodelmysql.APIKeyRefill) }},
	{gen.Bun, gen.SQLite, func() any { return new(bunsqlite.RateLimit) }, func() any { return new(bunsqlite.APIKey) }, func() any { return new(bunsqlite.RerolledKey) }, func() any { return new(bunsqlite.APIKeyLimit) }, func() any { return new(bunsqlite.APIKeyRefill) }},
	{gen.Bun, gen.Postgres, func() any { return new(bunpostgres.RateLimit) }, func() any { return new(bunpostgres.APIKey) }, func() any { return new(bunpostgres.RerolledKey) }, func() any { return new(bunpostgres.APIKeyLimit) }, func() any { return new(bunpostgres.APIKeyRefill) }},
	{gen.Bun, gen.MySQL, func() any { return new(bunmysql.RateLimit) }, func() any { return new(bunmysql.APIKey) }, func() any { return new(bunmysql.RerolledKey) }, func() any { return new(bunmysql.APIKeyLimit) }, func() any { return new(bunmysql.APIKeyRefill) }},
}

func (m modelSet) name() string { return string(m.target) + "/" + string(m.dialect) }

// orm opens the ORM of m on db.
type orm struct {
	gorm *gorm.DB
	bun  *bun.DB
}

func open(t *testing.T, m modelSet, db *sql.DB) orm {
	t.Helper()
	if m.target == gen.Bun {
		b, err := testenv.OpenBun(m.dialect, db)
		if err != nil {
			t.Fatal(err)
		}
		return orm{bun: b}
	}
	g, err := testenv.OpenGorm(m.dialect, db)
	if err != nil {
		t.Fatal(err)
	}
	return orm{gorm: g}
}

// TestMigrateMatchesDDL lets each ORM create the tables from the generated
// tags (gorm's AutoMigrate, bun's CreateTable) and diffs the result with
// the schema. gorm's must match exactly; bun's CREATE TABLE makes no plain
// indexes, so those, and only those, are missing.
func TestMigrateMatchesDDL(t *testing.T) {
	ctx := context.Background()
	for _, srv := range testenv.Servers(t) {
		for _, m := range sets {
			if m.dialect != srv.Dialect {
				continue
			}
			t.Run(m.name(), func(t *testing.T) {
				db := srv.Open(t)
				o := open(t, m, db)
				var want []string
				if o.gorm != nil {
					if err := o.gorm.AutoMigrate(m.rateLimit(), m.apiKey(), m.rerolled(), m.apikeyLimit(), m.refill()); err != nil {
						t.Fatal(err)
					}
				} else {
					for _, model := range []any{m.rateLimit(), m.apiKey(), m.rerolled(), m.apikeyLimit(), m.refill()} {
						if _, err := o.bun.NewCreateTable().Model(model).Exec(ctx); err != nil {
							t.Fatal(err)
						}
					}
					q := m.dialect.Quote
					want = []string{
						"CREATE INDEX " + q("rate_limit_last_request_idx") + " ON " + q("rate_limit") + " (" + q("last_request") + ")",
						"CREATE INDEX " + q("apikey_config_id_idx") + " ON " + q("apikey") + " (" + q("config_id") + ")",
						"CREATE INDEX " + q("apikey_reference_id_idx") + " ON " + q("apikey") + " (" + q("reference_id") + ")",
						"CREATE INDEX " + q("rerolled_key_key_id_idx") + " ON " + q("rerolled_key") + " (" + q("key_id") + ")",
						"CREATE INDEX " + q("rerolled_key_expires_at_idx") + " ON " + q("rerolled_key") + " (" + q("expires_at") + ")",
						"CREATE INDEX " + q("apikey_limit_key_id_idx") + " ON " + q("apikey_limit") + " (" + q("key_id") + ")",
						"CREATE INDEX " + q("apikey_limit_owner_idx") + " ON " + q("apikey_limit") + " (" + q("owner") + ")",
					}
				}
				plan, err := gen.DiffDB(ctx, db, gen.Config{Dialect: m.dialect})
				if err != nil {
					t.Fatal(err)
				}
				if strings.Join(plan.Statements, "\n") != strings.Join(want, "\n") || len(plan.Left) != 0 {
					t.Errorf("%s's tables differ from the schema:\n%s\n%s", m.target, strings.Join(plan.Statements, "\n"), strings.Join(plan.Left, "\n"))
				}
				// The ORM names the unique indexes (and gorm the plain ones)
				// as the DDL does; SQLite names a constraint's index itself.
				if m.target == gen.Bun && m.dialect == gen.SQLite {
					return
				}
				names := map[string][2]string{"rate_limit_key_key": {"rate_limit", "key"}, "apikey_key_key": {"apikey", "key"},
					"rerolled_key_key_key": {"rerolled_key", "key"}, "apikey_limit_key_key": {"apikey_limit", "key"}}
				if m.target == gen.Gorm {
					names["rate_limit_last_request_idx"] = [2]string{"rate_limit", "last_request"}
					names["apikey_config_id_idx"] = [2]string{"apikey", "config_id"}
					names["apikey_reference_id_idx"] = [2]string{"apikey", "reference_id"}
					names["rerolled_key_key_id_idx"] = [2]string{"rerolled_key", "key_id"}
					names["rerolled_key_expires_at_idx"] = [2]string{"rerolled_key", "expires_at"}
					names["apikey_limit_key_id_idx"] = [2]string{"apikey_limit", "key_id"}
					names["apikey_limit_owner_idx"] = [2]string{"apikey_limit", "owner"}
				}
				cat, err := gen.ReadCatalog(ctx, db, m.dialect, []string{"rate_limit", "apikey", "rerolled_key", "apikey_limit"})
				if err != nil {
					t.Fatal(err)
				}
				for name, on := range names {
					var found bool
					for _, idx := range cat[on[0]].Indexes {
						found = found || (idx.Name == name && strings.Join(idx.Columns, ",") == on[1])
					}
					if !found {
						t.Errorf("no index %s on %s(%s): %+v", name, on[0], on[1], cat[on[0]].Indexes)
					}
				}
			})
		}
	}
}

// TestRoundTrip creates the tables from the generated DDL, writes a row of
// each model through the ORM and reads it back: set fields, NULLs, the
// DDL's defaults and a false bool whose column defaults to TRUE.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	created := time.Date(2024, 5, 6, 7, 8, 9, 123_000_000, time.UTC)
	rateLimit := map[string]any{"Key": "ip:1", "Count": int64(3), "LastRequest": int64(1700000000123)}
	apiKey := map[string]any{"Key": "hash", "ReferenceID": "user-1", "Name": "ci", "Remaining": int64(10),
		"Enabled": false, "RateLimitEnabled": true, "CreatedAt": created, "UpdatedAt": created, "LastRefillAt": created.Add(time.Hour)}
	apiKeyDefaults := map[string]any{"ConfigID": "default", "RequestCount": int64(0)}
	for _, srv := range testenv.Servers(t) {
		for _, m := range sets {
			if m.dialect != srv.Dialect {
				continue
			}
			t.Run(m.name(), func(t *testing.T) {
				db := srv.Open(t)
				stmts, err := gen.DDL(core.MustSchema(core.Naming{}), m.dialect)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range stmts {
					if _, err := db.ExecContext(ctx, q); err != nil {
						t.Fatal(err)
					}
				}
				o := open(t, m, db)
				roundTrip(t, o, m.rateLimit, rateLimit, nil)
				roundTrip(t, o, m.apiKey, apiKey, apiKeyDefaults)

				again := m.rateLimit()
				fill(t, again, map[string]any{"Key": "ip:1"})
				if err := o.insert(ctx, again); err == nil {
					t.Error("a second row with the same key was accepted")
				}
			})
		}
	}
}

// roundTrip inserts a model with set, reads it back by id and checks
// every field: the value of set, else of defaults, else nil or zero.
func roundTrip(t *testing.T, o orm, newModel func() any, set, defaults map[string]any) {
	t.Helper()
	ctx := context.Background()
	row := newModel()
	fill(t, row, set)
	if err := o.insert(ctx, row); err != nil {
		t.Fatal(err)
	}
	id := reflect.ValueOf(row).Elem().FieldByName("ID").Int()
	if id == 0 {
		t.Fatal("no id after insert")
	}
	back := newModel()
	if err := o.find(ctx, back, id); err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(back).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if name == "BaseModel" || name == "ID" {
			continue
		}
		want, ok := set[name]
		if !ok {
			want, ok = defaults[name]
		}
		got := v.Field(i)
		if got.Kind() == reflect.Pointer {
			if !ok {
				if !got.IsNil() {
					t.Errorf("%T.%s = %v, want NULL", back, name, got.Elem())
				}
				continue
			}
			if got.IsNil() {
				t.Errorf("%T.%s is NULL, want %v", back, name, want)
				continue
			}
			got = got.Elem()
		}
		if !ok {
			want = reflect.Zero(got.Type()).Interface()
		}
		if wt, isTime := want.(time.Time); isTime {
			if !got.Interface().(time.Time).Equal(wt) {
				t.Errorf("%T.%s = %v, want %v", back, name, got, wt)
			}
			continue
		}
		if got.Interface() != want {
			t.Errorf("%T.%s = %#v, want %#v", back, name, got.Interface(), want)
		}
	}
}

// fill sets the named fields of the struct ptr points to, through a
// pointer for a nullable field.
func fill(t *testing.T, ptr any, values map[string]any) {
	t.Helper()
	v := reflect.ValueOf(ptr).Elem()
	for name, val := range values {
		f := v.FieldByName(name)
		if !f.IsValid() {
			t.Fatalf("%T has no field %s", ptr, name)
		}
		x := reflect.ValueOf(val)
		if f.Kind() == reflect.Pointer {
			p := reflect.New(f.Type().Elem())
			p.Elem().Set(x)
			x = p
		}
		f.Set(x)
	}
}

func (o orm) insert(ctx context.Context, row any) error {
	if o.gorm != nil {
		return o.gorm.WithContext(ctx).Create(row).Error
	}
	_, err := o.bun.NewInsert().Model(row).Exec(ctx)
	return err
}

func (o orm) find(ctx context.Context, row any, id int64) error {
	if o.gorm != nil {
		return o.gorm.WithContext(ctx).First(row, id).Error
	}
	reflect.ValueOf(row).Elem().FieldByName("ID").SetInt(id)
	return o.bun.NewSelect().Model(row).WherePK().Scan(ctx)
}
