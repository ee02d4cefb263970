package sluiceent

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "modernc.org/sqlite"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
)

func openSQLite(t *testing.T) *entsql.Driver {
	t.Helper()
	pool, err := sql.Open("sqlite", sluicesql.SQLiteDSN(filepath.Join(t.TempDir(), "direct.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return entsql.OpenDB(dialect.SQLite, pool)
}

func TestDirectPath(t *testing.T) {
	if varsKey == nil {
		t.Fatal("entsql.WithVar's context key was not found: the direct path is never taken; update varsKey")
	}
	drv := openSQLite(t)
	ctx := context.Background()
	if plain(ctx, drv) == nil {
		t.Error("ent's own driver does not take the direct path")
	}
	if plain(entsql.WithVar(ctx, "search_path", "x"), drv) != nil {
		t.Error("a context with session variables takes the direct path")
	}
	if plain(ctx, dialect.Debug(drv)) != nil {
		t.Error("a debug driver takes the direct path")
	}
	tx, err := drv.Tx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if plain(ctx, tx) == nil {
		t.Error("ent's own transaction does not take the direct path")
	}
}

// TestDebugDriverSeesStatements: a driver wrapper, such as ent's debug
// driver, sees every statement the adapter runs, queries, execs and
// transactions alike.
func TestDebugDriverSeesStatements(t *testing.T) {
	drv := openSQLite(t)
	var mu sync.Mutex
	var seen []string
	debug := dialect.DebugWithContext(drv, func(_ context.Context, v ...any) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprint(v...))
	})
	db, err := Open(debug)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "k", "count": int64(0), "lastRequest": int64(0)}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
		Where: []core.Where{core.Eq("key", "k")}, Increment: map[string]int64{"count": 1}}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := db.UpdateMany(ctx, core.ModelRateLimit, []core.Where{core.Eq("key", "k")}, map[string]any{"lastRequest": int64(5)}); err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		_, err := tx.Count(ctx, core.ModelRateLimit)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(seen, "\n")
	for _, want := range []string{"RETURNING", "driver.Exec: query=UPDATE", "COUNT(*)", "Tx("} {
		if !strings.Contains(all, want) {
			t.Errorf("the debug driver did not see %q:\n%s", want, all)
		}
	}
}
