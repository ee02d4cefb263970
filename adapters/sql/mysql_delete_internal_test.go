package sluicesql

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
)

// TestDeleteManyLocksNoKeptRow: a prune whose range covers most of a
// table (which InnoDB runs as a full scan, locking every row it reads)
// completes while another transaction holds the lock of a row it keeps,
// deletes exactly the matching rows across several batches, and leaves
// the locked row and the other kept rows alone. Run as one plain DELETE,
// it waits on the held lock until the deadline.
func TestDeleteManyLocksNoKeptRow(t *testing.T) {
	ctx := t.Context()
	sdb, rl, name := mysqlFixture(t, nil)
	if _, err := sdb.ExecContext(ctx, "CREATE INDEX `"+name+"_lr` ON `"+name+"` (`last_request`)"); err != nil {
		t.Fatal(err)
	}
	// Every 40th row is kept, so that kept rows lie between expired ones
	// in primary-key order; last_request below 1000 is expired.
	const rows = 2*mysqlDeleteBatch + 300
	var sb strings.Builder
	sb.WriteString("INSERT INTO `" + name + "` (`key`, `count`, `last_request`) VALUES ")
	for i := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		last := i % 1000
		if i%40 == 0 {
			last = 1000 + i
		}
		fmt.Fprintf(&sb, "('k%04d', 1, %d)", i, last)
	}
	if _, err := sdb.ExecContext(ctx, sb.String()); err != nil {
		t.Fatal(err)
	}
	var wantDeleted, wantKept int64
	if err := sdb.QueryRowContext(ctx, "SELECT SUM(`last_request` < 1000), SUM(`last_request` >= 1000) FROM `"+name+"`").Scan(&wantDeleted, &wantKept); err != nil {
		t.Fatal(err)
	}
	if wantDeleted <= mysqlDeleteBatch {
		t.Fatalf("fixture: %d expired rows, want more than one batch of %d", wantDeleted, mysqlDeleteBatch)
	}

	// Another writer holds the lock of one kept row, taken by its unique
	// key so that it locks that row alone.
	lockedKey := fmt.Sprintf("k%04d", rows/2/40*40)
	holder, err := sdb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, "UPDATE `"+name+"` SET `count` = `count` + 1 WHERE `key` = ?", lockedKey); err != nil {
		t.Fatal(err)
	}

	a, err := New(ctx, FromDB(sdb), Options{Dialect: MySQL})
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := a.DeleteMany(dctx, rl, cols(core.Lt("last_request", 1000)))
	if err != nil {
		t.Fatalf("DeleteMany while a kept row is locked: %v (it waited on a row it does not delete)", err)
	}
	if n != wantDeleted {
		t.Fatalf("DeleteMany reported %d rows, want %d", n, wantDeleted)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	var left, locked int64
	if err := sdb.QueryRowContext(ctx, "SELECT COUNT(*), SUM(`key` = ? AND `last_request` >= 1000) FROM `"+name+"`", lockedKey).Scan(&left, &locked); err != nil {
		t.Fatal(err)
	}
	if left != wantKept || locked != 1 {
		t.Fatalf("%d rows left (the locked one %d times), want the %d kept rows", left, locked, wantKept)
	}
}
