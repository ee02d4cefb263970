package core_test

import (
	"context"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// owning hands out, as an adapter that reads rows from a database does,
// a new record each call, and says so (driver.RecordOwner); it keeps the
// last one to see what DB did with it.
type owning struct {
	*memory.Memory
	owned bool
	last  driver.Record
	where []driver.Where
}

func (o *owning) RecordsOwned() bool { return o.owned }

func (o *owning) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	rec, err := o.Memory.IncrementOne(ctx, t, where, inc, set)
	o.last, o.where = rec, where
	return rec, err
}

func TestOwnedRecordsConvertInPlace(t *testing.T) {
	ctx := context.Background()
	for _, owned := range []bool{true, false} {
		a := &owning{Memory: memory.New(), owned: owned}
		db := mustNew(t, a)
		mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k", "count": 1, "lastRequest": 5})
		row, ok, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
			Where: []core.Where{core.Eq("key", "k")}, Increment: map[string]int64{"count": 2}})
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if row.Int("count") != 3 || row.Int("lastRequest") != 5 || row.Text("key") != "k" || len(row) != 4 {
			t.Errorf("owned %v: row = %v", owned, row)
		}
		// In place, the adapter's record became the row; otherwise it is
		// left as the adapter made it, keyed by columns.
		_, rekeyed := a.last["lastRequest"]
		_, column := a.last["last_request"]
		if rekeyed != owned || column == owned {
			t.Errorf("owned %v: the adapter's record is %v", owned, a.last)
		}
		// The request DB handed the adapter is cleared once the call is over.
		for _, w := range a.where[:cap(a.where)] {
			if w.Value != nil || w.Column != "" {
				t.Errorf("owned %v: the where buffer still holds %v after the call", owned, w)
			}
		}
	}
}

// A record that fails to convert is left as it was, and the call fails.
func TestOwnedRecordConversionFailure(t *testing.T) {
	a := &driverRowOwned{rec: driver.Record{"id": int64(1), "key": "k", "count": "not a number", "last_request": int64(5)}}
	db := mustNew(t, a)
	_, _, err := db.FindOne(context.Background(), core.ModelRateLimit, core.Eq("key", "k"))
	if err == nil {
		t.Fatal("a count of text converted")
	}
	if a.rec["count"] != "not a number" || len(a.rec) != 4 {
		t.Errorf("the failed record was changed: %v", a.rec)
	}
}

type driverRowOwned struct {
	driver.Adapter
	rec driver.Record
}

func (d *driverRowOwned) RecordsOwned() bool { return true }
func (d *driverRowOwned) FindOne(context.Context, *driver.Table, []driver.Where) (driver.Record, error) {
	return d.rec, nil
}
func (d *driverRowOwned) IncrementOne(context.Context, *driver.Table, []driver.Where, []driver.Delta, []driver.Assignment) (driver.Record, error) {
	return nil, nil
}
