package sluicesql

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// TestOptimisticConflictsOnlyOnItsBounds: a concurrent change to the
// incremented column or to a column the write sets, made between the
// optimistic read and the write, does not make the write miss (two
// statements, no locking path) as long as the caller's where still holds,
// and the row returned is the true row after the write (the count from
// LAST_INSERT_ID, the set column the write's own value); a change that
// breaks the where (the count past the bound) misses and the locking path
// answers no match.
func TestOptimisticConflictsOnlyOnItsBounds(t *testing.T) {
	ctx := t.Context()
	sdb, rl, name := mysqlFixture(t, nil)
	if _, err := sdb.ExecContext(ctx, "INSERT INTO `"+name+"` (`key`, `count`, `last_request`) VALUES ('k', 5, 100)"); err != nil {
		t.Fatal(err)
	}
	a, stmts := oneConnAdapter(t, sdb)
	concurrently := func(stmt string) {
		once := sync.Once{}
		setHook(t, func(ctx context.Context) {
			once.Do(func() {
				if _, err := sdb.ExecContext(ctx, stmt); err != nil {
					t.Error(err)
				}
			})
		}, a)
	}
	incr := func(set int64) driver.Record {
		t.Helper()
		rec, err := a.IncrementOne(ctx, rl, cols(core.Eq("key", "k"), core.Lt("count", 20)),
			[]driver.Delta{{Column: "count", By: 1}}, []driver.Assignment{{Column: "last_request", Value: set}})
		if err != nil {
			t.Fatalf("IncrementOne: %v", err)
		}
		return rec
	}
	want := func(rec driver.Record, count, last int64, statements int64) {
		t.Helper()
		id, c, l, k := storedRow(t, sdb, name, "k")
		if got, stored := rowText(rec), fmt.Sprintf("%d %s %d %d", id, k, c, l); got != stored || c != count || l != last {
			t.Fatalf("returned %q, stored %q; want count %d, last_request %d", got, stored, count, last)
		}
		if n := stmts(); n != statements {
			t.Fatalf("%d statements, want %d", n, statements)
		}
	}
	// Another writer's increment and set between the read and the write.
	concurrently("UPDATE `" + name + "` SET `count` = `count` + 3, `last_request` = 555 WHERE `key` = 'k'")
	want(incr(200), 9, 200, 2)
	// Another writer takes the count to the bound: the where no longer
	// holds, the write misses, and the locking path finds no row.
	concurrently("UPDATE `" + name + "` SET `count` = 20 WHERE `key` = 'k'")
	if rec, err := a.IncrementOne(ctx, rl, cols(core.Eq("key", "k"), core.Lt("count", 20)), []driver.Delta{{Column: "count", By: 1}}, nil); rec != nil || err != nil {
		t.Fatalf("past the bound: %v, %v; want no match", rec, err)
	}
}
