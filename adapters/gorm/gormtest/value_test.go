package gormtest_test

import (
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// TestValueIncrementOnMySQL: on MySQL, gorm's results carry the last
// insert id, so an increment that answers with the value is one UPDATE
// (driver.ValueIncrementer), on gorm's direct path and through its callback
// chain alike, and right either way. A raw callback replaced by one that
// does not keep the driver's result leaves the value unknown: that call
// fails, saying the row was incremented, and later calls take
// IncrementOne, still right (core.DB's NativeValueIncrement, decided when
// it wrapped the adapter, stays as it was).
func TestValueIncrementOnMySQL(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, f *adaptertest.Fixture) {
		if b.name != "MySQL" && b.name != "MySQLFoundRows" {
			t.Skip("the value increment is one statement on MySQL only")
		}
		ctx := f.Ctx
		mustCreate(t, f.DB, "counter", map[string]any{"name": "v", "hits": 10})
		want := int64(10)
		incr := func(how string) {
			t.Helper()
			want += 3
			got, ok, err := f.DB.IncrementValue(ctx, core.IncrementRequest{Model: "counter",
				Where: []core.Where{core.Eq("name", "v")}, Increment: map[string]int64{"hits": 3}})
			if err != nil || !ok || got != want {
				t.Fatalf("%s: IncrementValue = %d, %v, %v; want %d", how, got, ok, err, want)
			}
		}
		if !f.DB.NativeValueIncrement() {
			t.Fatal("gorm on MySQL does not report the value increment as one statement")
		}
		incr("direct path")

		g := gormOf(t, f.Adapter)
		seen := 0
		if err := g.Callback().Raw().After("gorm:raw").Register("test:count", func(*gorm.DB) { seen++ }); err != nil {
			t.Fatal(err)
		}
		incr("through gorm's callbacks")
		if seen != 1 || !f.DB.NativeValueIncrement() {
			t.Fatalf("through gorm's callbacks: the raw chain ran %d times, value increment native %v; want 1, true", seen, f.DB.NativeValueIncrement())
		}

		// A replacement that runs the statement but keeps no result.
		if err := g.Callback().Raw().Replace("gorm:raw", func(db *gorm.DB) {
			if db.Statement.Result != nil {
				r := *db.Statement.Result
				defer func() { *db.Statement.Result = r }()
			}
			callbacks.RawExec(db)
		}); err != nil {
			t.Fatal(err)
		}
		_, _, err := f.DB.IncrementValue(ctx, core.IncrementRequest{Model: "counter",
			Where: []core.Where{core.Eq("name", "v")}, Increment: map[string]int64{"hits": 3}})
		if err == nil {
			t.Fatal("IncrementValue with no last insert id to read succeeded")
		}
		want += 3 // it was applied
		// core.DB decided the capability when it wrapped the adapter; the
		// adapter itself now takes IncrementOne for the value.
		if vi, ok := f.DB.Adapter().(driver.ValueIncrementer); !ok || vi.ValueIncrementSaves() {
			t.Fatal("after a result without the last insert id, the adapter still reports the value increment as one statement")
		}
		incr("after falling back")
		row, ok, err := f.DB.FindOne(ctx, "counter", core.Eq("name", "v"))
		if err != nil || !ok || row.Int("hits") != want {
			t.Fatalf("stored %v %v %v, want hits %d", row, ok, err, want)
		}
	})
}
