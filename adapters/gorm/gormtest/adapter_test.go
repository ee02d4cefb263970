package gormtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sluicegorm "github.com/sluice-go/sluice/adapters/gorm"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/gen"
	"gorm.io/gorm"
)

func counterTable(t *testing.T, f *adaptertest.Fixture) string {
	t.Helper()
	tb, ok := f.Schema.Table("counter")
	if !ok {
		t.Fatal("no counter model in the fixture's schema")
	}
	return tb.Name
}

func mustCreate(t *testing.T, db *core.DB, model string, values map[string]any) core.Row {
	t.Helper()
	row, err := db.Create(context.Background(), model, values)
	if err != nil {
		t.Fatalf("Create %s %v: %v", model, values, err)
	}
	return row
}

// A write that rewrites the values a row already holds is still a match.
// MySQL without clientFoundRows reports such an UPDATE as 0 rows affected;
// the test first proves that the DSN really behaves so, then that the
// adapter is not fooled by it.
func TestRewriteIsAMatchWithAndWithoutClientFoundRows(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, f *adaptertest.Fixture) {
		ctx := f.Ctx
		for range 2 {
			mustCreate(t, f.DB, "counter", map[string]any{"name": "a", "hits": 5})
		}
		g := gormOf(t, f.Adapter)
		q := "UPDATE " + b.dialect.Quote(counterTable(t, f)) + " SET " + b.dialect.Quote("hits") + " = " + b.dialect.Quote("hits")
		raw := g.WithContext(ctx).Exec(q)
		if raw.Error != nil {
			t.Fatal(raw.Error)
		}
		wantRaw := int64(2)
		if b.name == "MySQL" {
			wantRaw = 0 // rows changed, not matched
		}
		if raw.RowsAffected != wantRaw {
			t.Fatalf("raw no-op UPDATE reported %d rows, want %d: the backend does not behave as this test assumes", raw.RowsAffected, wantRaw)
		}

		row, ok, err := f.DB.IncrementOne(ctx, core.IncrementRequest{Model: "counter", Where: []core.Where{core.Eq("name", "a")}, Increment: map[string]int64{"hits": 0}})
		if err != nil || !ok || row.Int("hits") != 5 {
			t.Fatalf("IncrementOne by 0 = %v, %v, %v; want the row with hits 5", row, ok, err)
		}
		row, ok, err = f.DB.Update(ctx, "counter", []core.Where{core.Eq("name", "a")}, map[string]any{"hits": 5})
		if err != nil || !ok || row.Int("hits") != 5 {
			t.Fatalf("Update to the same value = %v, %v, %v; want the row with hits 5", row, ok, err)
		}
		n, err := f.DB.UpdateMany(ctx, "counter", []core.Where{core.Eq("name", "a")}, map[string]any{"hits": 5})
		if err != nil || n != 2 {
			t.Fatalf("UpdateMany to the same value = %d, %v; want 2 rows matched", n, err)
		}
	})
}

// The caller's own gorm transaction can be handed to New: every call runs
// in it, commits and rollbacks are the caller's, and InTx nests as a
// savepoint.
func TestCallersTransaction(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, f *adaptertest.Fixture) {
		ctx := f.Ctx
		mustCreate(t, f.DB, "counter", map[string]any{"name": "a"})
		inc := core.IncrementRequest{Model: "counter", Where: []core.Where{core.Eq("name", "a")}, Increment: map[string]int64{"hits": 1}}
		hits := func(db *core.DB) int64 {
			t.Helper()
			row, ok, err := db.FindOne(ctx, "counter", core.Eq("name", "a"))
			if err != nil || !ok {
				t.Fatalf("FindOne = %v, %v", ok, err)
			}
			return row.Int("hits")
		}

		for _, commit := range []bool{false, true} {
			tx := gormOf(t, f.Adapter).WithContext(ctx).Begin()
			if tx.Error != nil {
				t.Fatal(tx.Error)
			}
			txdb, err := sluicegorm.Open(tx, core.WithSchema(f.Schema))
			if err != nil {
				t.Fatal(err)
			}
			before := hits(f.DB)
			if row, ok, err := txdb.IncrementOne(ctx, inc); err != nil || !ok || row.Int("hits") != before+1 {
				t.Fatalf("IncrementOne in the caller's transaction = %v, %v, %v", row, ok, err)
			}
			// A failing InTx inside rolls back to its savepoint only.
			boom := errors.New("boom")
			err = txdb.InTx(ctx, func(ctx context.Context, in *core.DB) error {
				if _, _, err := in.IncrementOne(ctx, inc); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("InTx = %v, want boom", err)
			}
			if got := hits(txdb); got != before+1 {
				t.Fatalf("inside the transaction after the rolled-back savepoint: hits %d, want %d", got, before+1)
			}
			if commit {
				err = tx.Commit().Error
			} else {
				err = tx.Rollback().Error
			}
			if err != nil {
				t.Fatal(err)
			}
			want := before
			if commit {
				want++
			}
			if got := hits(f.DB); got != want {
				t.Fatalf("after commit=%v: hits %d, want %d", commit, got, want)
			}
		}
	})
}

// A duplicate Create inside a transaction fails with ErrConflict and leaves
// the transaction usable (PostgreSQL would otherwise abort it).
func TestConflictInsideTransaction(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, f *adaptertest.Fixture) {
		ctx := f.Ctx
		err := f.DB.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
			mustCreate(t, tx, "rateLimit", map[string]any{"key": "k", "count": 1, "lastRequest": 1})
			if _, err := tx.Create(ctx, "rateLimit", map[string]any{"key": "k", "count": 1, "lastRequest": 1}); !errors.Is(err, core.ErrConflict) {
				t.Errorf("duplicate Create = %v, want ErrConflict", err)
			}
			_, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: "rateLimit", Where: []core.Where{core.Eq("key", "k")}, Increment: map[string]int64{"count": 1}})
			if err != nil || !ok {
				t.Errorf("IncrementOne after the conflict = %v, %v", ok, err)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		row, ok, err := f.DB.FindOne(ctx, "rateLimit", core.Eq("key", "k"))
		if err != nil || !ok || row.Int("count") != 2 {
			t.Fatalf("after commit: %v, %v, %v; want count 2", row, ok, err)
		}
		// A unique conflict on Update and on IncrementOne's Set maps too.
		mustCreate(t, f.DB, "counter", map[string]any{"name": "a", "slot": "s1"})
		mustCreate(t, f.DB, "counter", map[string]any{"name": "b", "slot": "s2"})
		if _, _, err := f.DB.Update(ctx, "counter", []core.Where{core.Eq("name", "b")}, map[string]any{"slot": "s1"}); !errors.Is(err, core.ErrConflict) {
			t.Fatalf("Update onto a taken unique value = %v, want ErrConflict", err)
		}
		_, _, err = f.DB.IncrementOne(ctx, core.IncrementRequest{Model: "counter", Where: []core.Where{core.Eq("name", "b")}, Increment: map[string]int64{"hits": 1}, Set: map[string]any{"slot": "s1"}})
		if !errors.Is(err, core.ErrConflict) {
			t.Fatalf("IncrementOne setting a taken unique value = %v, want ErrConflict", err)
		}
	})
}

// Unwrap reaches the *gorm.DB, and inside InTx the transaction itself:
// writes made through it commit or roll back with sluice's.
func TestUnwrap(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, f *adaptertest.Fixture) {
		ctx := f.Ctx
		g := gormOf(t, f.Adapter)
		if g.Dialector.Name() != string(b.dialect) {
			t.Fatalf("Unwrap dialect %q, want %q", g.Dialector.Name(), b.dialect)
		}
		table := b.dialect.Quote(counterTable(t, f))
		insert := "INSERT INTO " + table + " (" + b.dialect.Quote("name") + ") VALUES (?)"
		boom := errors.New("boom")
		err := f.DB.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
			txg := gormOf(t, tx.Adapter())
			if _, ok := txg.Statement.ConnPool.(gorm.TxCommitter); !ok {
				t.Errorf("inside InTx, Unwrap gave a %T pool, not a transaction", txg.Statement.ConnPool)
			}
			if err := txg.WithContext(ctx).Exec(insert, "raw").Error; err != nil {
				return err
			}
			if n, err := tx.Count(ctx, "counter", core.Eq("name", "raw")); err != nil || n != 1 {
				t.Errorf("sluice does not see the row written through Unwrap in the same transaction: %d, %v", n, err)
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("InTx = %v, want boom", err)
		}
		if n, err := f.DB.Count(ctx, "counter", core.Eq("name", "raw")); err != nil || n != 0 {
			t.Fatalf("after rollback: %d rows, %v; want 0", n, err)
		}
	})
}

// SQLite has no time type: times are stored as driver.FormatTime text, so
// that text order is time order, whatever zone the caller used.
func TestSQLiteStoresTimesAsFormatTimeText(t *testing.T) {
	b := backends()[0]
	f := adaptertest.NewFixture(t, b.maker())
	cet := time.FixedZone("CET", 3600)
	at := time.Date(2026, 3, 1, 12, 30, 0, 123456789, cet)
	row := mustCreate(t, f.DB, "counter", map[string]any{"name": "a", "seenAt": at})
	var text string
	q := "SELECT " + gen.SQLite.Quote("seen_at") + " FROM " + gen.SQLite.Quote(counterTable(t, f))
	if err := gormOf(t, f.Adapter).Raw(q).Row().Scan(&text); err != nil {
		t.Fatal(err)
	}
	if want := "2026-03-01T11:30:00.123Z"; text != want {
		t.Fatalf("stored %q, want %q", text, want)
	}
	if got := row.Time("seenAt"); !got.Equal(at.Truncate(time.Millisecond)) || got.Location() != time.UTC {
		t.Fatalf("returned %v, want %v in UTC", got, at.Truncate(time.Millisecond))
	}
	// A range guard bound in another zone compares as time, not as text.
	n, err := f.DB.Count(f.Ctx, "counter", core.Gt("seenAt", at.Add(-time.Millisecond).In(time.FixedZone("X", -8*3600))))
	if err != nil || n != 1 {
		t.Fatalf("Count(seenAt > at-1ms) = %d, %v; want 1", n, err)
	}
}
