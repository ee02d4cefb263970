package sluicegorm

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/sluice-go/sluice/adapters/gorm/sqlitegorm"
	"github.com/sluice-go/sluice/core"
)

// recorder is a gorm logger that keeps the text of every statement traced
// to it.
type recorder struct {
	mu  sync.Mutex
	sql []string
}

func (r *recorder) LogMode(logger.LogLevel) logger.Interface { return r }
func (r *recorder) Info(context.Context, string, ...any)     {}
func (r *recorder) Warn(context.Context, string, ...any)     {}
func (r *recorder) Error(context.Context, string, ...any)    {}
func (r *recorder) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	q, _ := fc()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sql = append(r.sql, q)
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sql...)
}

// openDirect opens a gorm DB on a new SQLite file with the given logger,
// and a core.DB through the adapter with its tables made.
func openDirect(t *testing.T, l logger.Interface) (*gorm.DB, *core.DB) {
	t.Helper()
	g, err := sqlitegorm.Open(filepath.Join(t.TempDir(), "direct.db"), &gorm.Config{Logger: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pool, err := g.DB(); err == nil {
			pool.Close()
		}
	})
	db, err := Open(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(context.Background()); err != nil {
		t.Fatal(err)
	}
	return g, db
}

func increment(t *testing.T, db *core.DB, key string) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": key, "count": int64(0), "lastRequest": int64(0)}); err != nil {
		t.Fatal(err)
	}
	row, ok, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
		Where: []core.Where{core.Eq("key", key)}, Increment: map[string]int64{"count": 1}})
	if err != nil || !ok || row.Int("count") != 1 {
		t.Fatalf("IncrementOne: %v %v %v", row, ok, err)
	}
	if _, err := db.UpdateMany(ctx, core.ModelRateLimit, []core.Where{core.Eq("key", key)}, map[string]any{"lastRequest": int64(5)}); err != nil {
		t.Fatal(err)
	}
}

func TestDirectChainFound(t *testing.T) {
	if fnsIndex == nil {
		t.Fatal("gorm's processor has no fns field of the expected shape: the direct path is never taken; update fnsIndex")
	}
	g, _ := openDirect(t, logger.Discard)
	if !direct(g, true) || !direct(g, false) {
		t.Fatal("a gorm DB with only gorm's default callbacks does not take the direct path")
	}
	if direct(g.Session(&gorm.Session{DryRun: true}), true) {
		t.Error("DryRun takes the direct path")
	}
}

// TestDirectLogs: on the direct path, the logger still sees every
// statement, with its values written in as gorm's Explain writes them.
func TestDirectLogs(t *testing.T) {
	rec := &recorder{}
	g, db := openDirect(t, rec)
	if !direct(g, true) {
		t.Fatal("not on the direct path")
	}
	before := len(rec.seen())
	increment(t, db, "logged-key")
	var update, updateMany bool
	for _, q := range rec.seen()[before:] {
		update = update || strings.HasPrefix(q, "UPDATE") && strings.Contains(q, "RETURNING") && strings.Contains(q, "logged-key")
		updateMany = updateMany || strings.HasPrefix(q, "UPDATE") && !strings.Contains(q, "RETURNING") && strings.Contains(q, "logged-key")
	}
	if !update || !updateMany {
		t.Fatalf("the logger missed statements (UPDATE … RETURNING %v, UPDATE %v): %q", update, updateMany, rec.seen()[before:])
	}
}

// TestCallbackAddedLaterSeesStatements: a callback registered after the
// adapter was made (as a plugin such as otelgorm does) turns the direct
// path off and sees every statement from then on, queries and execs.
func TestCallbackAddedLaterSeesStatements(t *testing.T) {
	g, db := openDirect(t, logger.Discard)
	increment(t, db, "before-plugin")
	var mu sync.Mutex
	var seen []string
	record := func(tx *gorm.DB) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, tx.Statement.SQL.String())
	}
	if err := g.Callback().Row().After("gorm:row").Register("test:row", record); err != nil {
		t.Fatal(err)
	}
	if err := g.Callback().Raw().After("gorm:raw").Register("test:raw", record); err != nil {
		t.Fatal(err)
	}
	if direct(g, true) || direct(g, false) {
		t.Fatal("the direct path is still taken with a plugin's callbacks registered")
	}
	increment(t, db, "after-plugin")
	mu.Lock()
	defer mu.Unlock()
	var query, exec bool
	for _, q := range seen {
		query = query || strings.Contains(q, "RETURNING")
		exec = exec || strings.HasPrefix(q, "UPDATE") && !strings.Contains(q, "RETURNING")
	}
	if !query || !exec {
		t.Fatalf("the callbacks missed statements (query %v, exec %v): %q", query, exec, seen)
	}
}

// TestReplacedOrRemovedDefault: replacing or removing gorm's own callback
// sends statements through gorm.
func TestReplacedOrRemovedDefault(t *testing.T) {
	g, _ := openDirect(t, logger.Discard)
	if err := g.Callback().Row().Replace("gorm:row", func(*gorm.DB) {}); err != nil {
		t.Fatal(err)
	}
	if direct(g, true) {
		t.Error("a replaced gorm:row takes the direct path")
	}
	if !direct(g, false) {
		t.Error("the untouched Raw chain left the direct path")
	}
	if err := g.Callback().Raw().Remove("gorm:raw"); err != nil {
		t.Fatal(err)
	}
	if direct(g, false) {
		t.Error("a removed gorm:raw takes the direct path")
	}
}
