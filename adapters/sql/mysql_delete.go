package sluicesql

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sluice-go/sluice/core/driver"
)

// mysqlDeleteBatch is how many rows one DELETE of deleteManyByKey names.
const mysqlDeleteBatch = 500

// deleteManyByKey is DeleteMany on MySQL outside a transaction. A plain
// "DELETE FROM t WHERE <where>" whose range covers much of a table is run
// by InnoDB as a full scan, and in REPEATABLE READ a scan locks every row
// it reads, matching or not, until it commits: a prune of expired
// rate-limit rows would then hold the lock of every live row and make
// every concurrent increment wait or die as a deadlock victim. So the rows
// are found first by a plain read, which locks nothing, and deleted by
// primary key in batches, each statement forced onto the primary key and
// repeating where, so that it locks only the rows it names and deletes
// only those that still match:
//
//	SELECT pk FROM t WHERE <where> AND pk > <last> ORDER BY pk LIMIT n
//	DELETE t FROM t FORCE INDEX (PRIMARY) WHERE pk IN (…) AND <where>
//
// The count is the rows the DELETEs removed. A row that comes to match
// after the read is not deleted: DeleteMany removes what matched when it
// began and still matches when its batch runs.
func (a *Adapter) deleteManyByKey(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	pk := t.PrimaryKey().Name
	var (
		total int64
		last  any
	)
	for {
		sel := a.newBuilder()
		sel.read("SELECT ")
		sel.ident(pk)
		sel.write(" FROM ")
		sel.ident(t.Name)
		page := where
		if last != nil {
			page = append(append(make([]driver.Where, 0, len(where)+1), where...), driver.Where{Column: pk, Op: driver.OpGt, Value: last})
		}
		sel.where(page)
		sel.write(" ORDER BY ")
		sel.ident(pk)
		sel.write(" LIMIT ")
		sel.write(strconv.Itoa(mysqlDeleteBatch))
		q, args, err := a.inlined(sel.sb.String(), sel.args)
		if err != nil {
			return total, err
		}
		rows, err := retried(a, ctx, func() ([]driver.Record, error) { return a.query(ctx, q, args) })
		if err != nil || len(rows) == 0 {
			return total, err
		}
		ids := make([]any, len(rows))
		for i, r := range rows {
			if ids[i], err = driver.ParseInt(r[pk]); err != nil {
				return total, fmt.Errorf("primary key %q: %w", pk, err)
			}
		}
		last = ids[len(ids)-1]
		del := a.newBuilder()
		del.write("DELETE ")
		del.ident(t.Name)
		del.write(" FROM ")
		del.ident(t.Name)
		del.write(" FORCE INDEX (PRIMARY)")
		del.where(append([]driver.Where{driver.Where{Column: pk, Op: driver.OpIn, Value: ids}}, where...))
		dq, dargs, err := a.inlined(del.sb.String(), del.args)
		if err != nil {
			return total, err
		}
		n, err := retried(a, ctx, func() (int64, error) { return a.exec(ctx, dq, dargs) })
		total += n
		if err != nil || len(rows) < mysqlDeleteBatch {
			return total, err
		}
	}
}
