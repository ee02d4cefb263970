package sqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
)

// At open, the engine refuses a database of another dialect than the one
// it was told, naming both.
func TestNewRefusesDialectMismatch(t *testing.T) {
	ctx := t.Context()
	for _, b := range allBackends()[:3] {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t, b.dsn(t))
			defer db.Close()
			for _, d := range []sluicesql.Dialect{sluicesql.Postgres, sluicesql.MySQL, sluicesql.SQLite} {
				_, err := sluicesql.NewDB(ctx, db, d)
				if d == b.dialect {
					if err != nil {
						t.Fatalf("as %s: %v", d, err)
					}
					continue
				}
				if !errors.Is(err, core.ErrWrongDatabase) || errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), d.String()) {
					t.Errorf("a %s database opened as %s: err = %v, want ErrWrongDatabase naming %s", b.name, d, err, d)
				}
			}
		})
	}
}

// A MySQL connection that reads DATETIME in another zone than UTC
// (parseTime with loc set to a local zone) would shift every stored time:
// it is refused at open, and loc=UTC is accepted.
func TestNewRefusesMySQLLocalTimes(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		loc    string
		refuse bool
	}{{"Europe/Paris", true}, {"America/New_York", true}, {"UTC", false}} {
		t.Run(tc.loc, func(t *testing.T) {
			loc, err := timeLoad(tc.loc)
			if err != nil {
				t.Skip(err)
			}
			dsn := mysqlDSN(t, func(c *mysql.Config) { c.ParseTime = true; c.Loc = loc })
			db, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, err = sluicesql.NewDB(ctx, db, sluicesql.MySQL)
			if tc.refuse && (!errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "loc=UTC")) {
				t.Errorf("loc=%s: err = %v, want a refusal that names loc=UTC", tc.loc, err)
			}
			if !tc.refuse && err != nil {
				t.Errorf("loc=%s: %v", tc.loc, err)
			}
		})
	}
}

// An increment that would overflow int64 fails with ErrInvalid on every
// dialect, and the row keeps its value and type (SQLite would otherwise
// store a REAL, and MinInt64 would wrap).
func TestIncrementOverflowIsInvalid(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		for _, tc := range []struct {
			start, delta int64
		}{{math.MaxInt64 - 1, 2}, {math.MaxInt64, math.MaxInt64}, {-1, math.MinInt64}, {math.MinInt64 + 1, -2}} {
			row, err := e.db.Create(e.ctx, "rateLimit", map[string]any{"key": "k", "count": tc.start})
			if err != nil {
				t.Fatal(err)
			}
			_, ok, err := e.db.IncrementOne(e.ctx, core.IncrementRequest{Model: "rateLimit",
				Where: []core.Where{core.Eq("id", row.Int("id"))}, Increment: map[string]int64{"count": tc.delta}})
			if !errors.Is(err, core.ErrInvalid) || ok {
				t.Errorf("%d %+d: ok=%v err=%v, want ErrInvalid", tc.start, tc.delta, ok, err)
			}
			after, found, err := e.db.FindOne(e.ctx, "rateLimit", core.Eq("id", row.Int("id")))
			if err != nil || !found || after.Int("count") != tc.start {
				t.Errorf("%d %+d: after the failure the row is %v (found %v, err %v), want count %d", tc.start, tc.delta, after, found, err, tc.start)
			}
			if _, err := e.db.DeleteMany(e.ctx, "rateLimit"); err != nil {
				t.Fatal(err)
			}
		}
		// Right at the limit is fine.
		row, _ := e.db.Create(e.ctx, "rateLimit", map[string]any{"key": "edge", "count": int64(math.MaxInt64 - 1)})
		got, ok, err := e.db.IncrementOne(e.ctx, core.IncrementRequest{Model: "rateLimit",
			Where: []core.Where{core.Eq("id", row.Int("id"))}, Increment: map[string]int64{"count": 1}})
		if err != nil || !ok || got.Int("count") != math.MaxInt64 {
			t.Errorf("MaxInt64-1 + 1: %v %v %v", got, ok, err)
		}
	})
}

// CheckSchema accepts the generated tables and names what is missing on a
// table without the unique index on its key.
func TestCheckSchema(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		if err := e.db.CheckSchema(e.ctx); err != nil {
			t.Fatalf("generated schema: %v", err)
		}
		// The same models on tables created without their unique index.
		naming := uniqueNaming()
		delete(naming.Tables, "counter")
		s := core.MustSchema(naming)
		ddl, err := gen.DDL(s, e.b.gen)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range ddl {
			if strings.Contains(strings.ToUpper(q), "UNIQUE") && strings.HasPrefix(strings.ToUpper(q), "CREATE UNIQUE INDEX") {
				continue
			}
			q = strings.ReplaceAll(q, " UNIQUE", "")
			if _, err := e.sqldb.ExecContext(e.ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		t.Cleanup(func() {
			for _, q := range gen.DropDDL(s, e.b.gen) {
				_, _ = e.sqldb.ExecContext(context.Background(), q)
			}
		})
		bare, err := core.New(e.a, core.WithSchema(s))
		if err != nil {
			t.Fatal(err)
		}
		err = bare.CheckSchema(e.ctx, core.ModelRateLimit)
		rl, _ := s.Table(core.ModelRateLimit)
		if !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), rl.Name) || !strings.Contains(err.Error(), `"key"`) {
			t.Errorf("a table without its unique key: err = %v, want ErrSchema naming the table and column", err)
		}
		if e.b.dialect == sluicesql.MySQL {
			// A key column under a PAD SPACE collation: "k" and "k " would share a row.
			pad := core.MustSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: rl.Name + "_pad"}})
			pt, _ := pad.Table(core.ModelRateLimit)
			q := "CREATE TABLE `" + pt.Name + "` (`id` BIGINT AUTO_INCREMENT PRIMARY KEY, `key` VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL UNIQUE, `count` BIGINT NOT NULL DEFAULT 0, `last_request` BIGINT NOT NULL DEFAULT 0)"
			if _, err := e.sqldb.ExecContext(e.ctx, q); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = e.sqldb.ExecContext(context.Background(), "DROP TABLE `"+pt.Name+"`") })
			padded, _ := core.New(e.a, core.WithSchema(pad))
			if err := padded.CheckSchema(e.ctx, core.ModelRateLimit); !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), "trailing spaces") {
				t.Errorf("a PAD SPACE key column: err = %v, want ErrSchema about trailing spaces", err)
			}
		}
		missing, err := core.NewSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: "no_such_table_here"}})
		if err != nil {
			t.Fatal(err)
		}
		nodb, _ := core.New(e.a, core.WithSchema(missing))
		if err := nodb.CheckSchema(e.ctx, core.ModelRateLimit); !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("a missing table: err = %v", err)
		}
	})
}
