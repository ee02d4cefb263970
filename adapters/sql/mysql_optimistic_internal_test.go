package sluicesql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// txStatus reads a session status counter inside a transaction.
func txStatus(t *testing.T, tx *sql.Tx, status string) int64 {
	t.Helper()
	var name string
	var n int64
	if err := tx.QueryRowContext(t.Context(), "SHOW SESSION STATUS LIKE '"+status+"'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// setHook makes hook run between the optimistic read and the guarded
// write of each adapter's increments.
func setHook(t *testing.T, hook func(ctx context.Context), adapters ...*Adapter) {
	t.Helper()
	for _, a := range adapters {
		a.e.steer.afterRead = hook
	}
	t.Cleanup(func() {
		for _, a := range adapters {
			a.e.steer.afterRead = nil
		}
	})
}

// oneConnAdapter is the engine on one connection of sdb, with a counter
// of the statements that connection has run.
func oneConnAdapter(t *testing.T, sdb *sql.DB) (*Adapter, func() int64) {
	t.Helper()
	conn, err := sdb.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	a, err := New(t.Context(), FromConn(conn), Options{Dialect: MySQL})
	if err != nil {
		t.Fatal(err)
	}
	last := questions(t, conn, "Questions")
	return a, func() int64 {
		now := questions(t, conn, "Questions")
		n := now - last - 1 // the SHOW itself
		last = now
		return n
	}
}

// vtext is a record value as text: the driver answers []byte or int64.
func vtext(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(v)
}

// rowText is the record's id, key, count and last_request.
func rowText(rec driver.Record) string {
	return vtext(rec["id"]) + " " + vtext(rec["key"]) + " " + vtext(rec["count"]) + " " + vtext(rec["last_request"])
}

func storedRow(t *testing.T, sdb *sql.DB, name, key string) (id, count, last int64, k string) {
	t.Helper()
	err := sdb.QueryRowContext(t.Context(), "SELECT `id`, `count`, `last_request`, `key` FROM `"+name+"` WHERE `key` = ?", key).Scan(&id, &count, &last, &k)
	if err != nil {
		t.Fatal(err)
	}
	return id, count, last, k
}

// TestOptimisticMissesConcurrentChange: a change to a column that is not
// incremented, made between the optimistic read and the write, makes the
// write miss (two statements, then the locking four), and the row
// returned is the true row after the write; a case-only change to the key
// under a case-insensitive collation, which the key's own where still
// matches, is caught the same way.
func TestOptimisticMissesConcurrentChange(t *testing.T) {
	ctx := t.Context()
	sdb, rl, name := mysqlFixture(t, nil)
	if _, err := sdb.ExecContext(ctx, "ALTER TABLE `"+name+"` MODIFY `key` VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"); err != nil {
		t.Fatal(err)
	}
	if _, err := sdb.ExecContext(ctx, "INSERT INTO `"+name+"` (`key`, `count`, `last_request`) VALUES ('k', 5, 100)"); err != nil {
		t.Fatal(err)
	}
	a, stmts := oneConnAdapter(t, sdb)
	incr := func(where ...core.Where) driver.Record {
		t.Helper()
		rec, err := a.IncrementOne(ctx, rl, cols(where...), []driver.Delta{{Column: "count", By: 1}}, nil)
		if err != nil || rec == nil {
			t.Fatalf("IncrementOne: %v %v", rec, err)
		}
		return rec
	}
	check := func(rec driver.Record, wantKey string, wantCount, wantLast int64) {
		t.Helper()
		id, count, last, key := storedRow(t, sdb, name, wantKey)
		got := rowText(rec)
		want := fmt.Sprintf("%d %s %d %d", id, key, count, last)
		if got != want || key != wantKey || count != wantCount || last != wantLast {
			t.Fatalf("returned %q, stored %q; want key %s count %d last_request %d", got, want, wantKey, wantCount, wantLast)
		}
	}

	// Unchanged between read and write: two statements.
	check(incr(core.Eq("key", "k")), "k", 6, 100)
	if n := stmts(); n != 2 {
		t.Fatalf("uncontended: %d statements, want 2", n)
	}

	// last_request changed between read and write.
	once := sync.Once{}
	setHook(t, func(ctx context.Context) {
		once.Do(func() {
			if _, err := sdb.ExecContext(ctx, "UPDATE `"+name+"` SET `last_request` = 777 WHERE `key` = 'k'"); err != nil {
				t.Error(err)
			}
		})
	}, a)
	check(incr(core.Eq("key", "k")), "k", 7, 777)
	if n := stmts(); n != 6 {
		t.Fatalf("after a miss: %d statements, want 2 + 4", n)
	}

	// The key's case changed between read and write: the where still
	// matches under utf8mb4_general_ci, the guard must not.
	once = sync.Once{}
	setHook(t, func(ctx context.Context) {
		once.Do(func() {
			if _, err := sdb.ExecContext(ctx, "UPDATE `"+name+"` SET `key` = 'K' WHERE `key` = 'k'"); err != nil {
				t.Error(err)
			}
		})
	}, a)
	check(incr(core.Eq("key", "k")), "K", 8, 777)
	if n := stmts(); n != 6 {
		t.Fatalf("after a case-only change: %d statements, want 2 + 4", n)
	}

	// A trailing space, equal under PAD SPACE collations, is a change too.
	once = sync.Once{}
	setHook(t, func(ctx context.Context) {
		once.Do(func() {
			if _, err := sdb.ExecContext(ctx, "UPDATE `"+name+"` SET `key` = 'K ' WHERE `key` = 'K'"); err != nil {
				t.Error(err)
			}
		})
	}, a)
	check(incr(core.Eq("key", "K")), "K ", 9, 777)
}

// TestOptimisticNoChangeFallsBack: with clientFoundRows off, an UPDATE
// that matches but changes nothing reports no row affected; IncrementOne
// then takes the locking path and still answers the row.
func TestOptimisticNoChangeFallsBack(t *testing.T) {
	ctx := t.Context()
	sdb, rl, name := mysqlFixture(t, func(c *mysql.Config) { c.ClientFoundRows = false })
	if _, err := sdb.ExecContext(ctx, "INSERT INTO `"+name+"` (`key`, `count`, `last_request`) VALUES ('k', 5, 100)"); err != nil {
		t.Fatal(err)
	}
	a, stmts := oneConnAdapter(t, sdb)
	rec, err := a.IncrementOne(ctx, rl, cols(core.Eq("key", "k")), nil, []driver.Assignment{{Column: "last_request", Value: int64(100)}})
	if err != nil || rec == nil || vtext(rec["count"]) != "5" || vtext(rec["last_request"]) != "100" {
		t.Fatalf("IncrementOne changing nothing: %v %v", rec, err)
	}
	if n := stmts(); n != 6 {
		t.Fatalf("a write that changes nothing: %d statements, want 2 + 4", n)
	}
	// No match at all: the read alone.
	rec, err = a.IncrementOne(ctx, rl, cols(core.Eq("key", "nobody")), []driver.Delta{{Column: "count", By: 1}}, nil)
	if err != nil || rec != nil {
		t.Fatalf("no match: %v %v", rec, err)
	}
	if n := stmts(); n != 1 {
		t.Fatalf("no match: %d statements, want 1", n)
	}
}

// TestOptimisticOverflow: an increment past int64 is refused with
// core.ErrInvalid before any write, outside and inside a transaction.
func TestOptimisticOverflow(t *testing.T) {
	ctx := t.Context()
	sdb, rl, name := mysqlFixture(t, nil)
	if _, err := sdb.ExecContext(ctx, "INSERT INTO `"+name+"` (`key`, `count`, `last_request`) VALUES ('hi', 9223372036854775800, 1), ('lo', -9223372036854775800, 1)"); err != nil {
		t.Fatal(err)
	}
	a, stmts := oneConnAdapter(t, sdb)
	for _, c := range []struct {
		key string
		by  int64
	}{{"hi", 8}, {"lo", -9}} {
		rec, err := a.IncrementOne(ctx, rl, cols(core.Eq("key", c.key)), []driver.Delta{{Column: "count", By: c.by}},
			[]driver.Assignment{{Column: "last_request", Value: int64(2)}})
		if !errors.Is(err, core.ErrInvalid) || rec != nil {
			t.Fatalf("%s %+d: %v %v, want ErrInvalid", c.key, c.by, rec, err)
		}
		if n := stmts(); n != 1 {
			t.Fatalf("%s %+d: %d statements, want the read alone", c.key, c.by, n)
		}
		_, count, last, _ := storedRow(t, sdb, name, c.key)
		if want := map[string]int64{"hi": 9223372036854775800, "lo": -9223372036854775800}[c.key]; count != want || last != 1 {
			t.Fatalf("%s: stored %d %d after a refused overflow", c.key, count, last)
		}
	}
}

// raceRows releases n IncrementOne calls at once, spread over pools, on a
// row of limit max; each sets last_request to its own number. It checks
// that exactly max succeed, that the counts returned are 1..max once each,
// that each returned row carries its caller's number (the row its write
// stored), and that the row stored at the end is the one returned with
// count max.
func raceRows(t *testing.T, adapters []*Adapter, sdb *sql.DB, rl *driver.Table, name, key string, n int, max int64) error {
	ctx := t.Context()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		byCnt = map[int64][]driver.Record{}
		first error
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			a := adapters[i%len(adapters)]
			rec, err := a.IncrementOne(ctx, rl, cols(core.Eq("key", key), core.Lt("count", max)),
				[]driver.Delta{{Column: "count", By: 1}}, []driver.Assignment{{Column: "last_request", Value: int64(1000 + i)}})
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if rec == nil {
				return
			}
			c, _ := driver.ParseInt(rec["count"])
			if l, _ := driver.ParseInt(rec["last_request"]); l != int64(1000+i) && first == nil {
				first = fmt.Errorf("caller %d got a row with last_request %d", i, l)
			}
			byCnt[c] = append(byCnt[c], rec)
		}()
	}
	close(start)
	wg.Wait()
	if first != nil {
		return first
	}
	total := 0
	for c, recs := range byCnt {
		total += len(recs)
		if c < 1 || c > max || len(recs) != 1 {
			return fmt.Errorf("count %d came back %d times", c, len(recs))
		}
	}
	if int64(total) != max {
		return fmt.Errorf("%d increments succeeded, want %d", total, max)
	}
	id, count, last, k := storedRow(t, sdb, name, key)
	final := byCnt[max][0]
	if got, want := rowText(final), fmt.Sprintf("%d %s %d %d", id, k, count, last); got != want {
		return fmt.Errorf("last row returned %q, stored %q", got, want)
	}
	if count != max {
		return fmt.Errorf("stored count %d, want %d", count, max)
	}
	return nil
}

// TestOptimisticRace: 64 callers on three pools race one row of limit 10,
// released at once, and then all made to read before any writes (a hook
// holds each between its read and its write until all have read, so all
// 64 read the same row and one write at most can win). Exactly 10 succeed
// each time, with rows distinct and as stored. With the column guards
// dropped (the read-then-write increment), the same check fails.
func TestOptimisticRace(t *testing.T) {
	ctx := t.Context()
	sdb, rl, name := mysqlFixture(t, nil)
	const n, max = 64, 10
	var adapters []*Adapter
	for range 3 {
		p, err := sql.Open("mysql", os.Getenv("SLUICE_MYSQL_DSN"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		p.SetMaxOpenConns(n)
		a, err := NewDB(ctx, p, MySQL)
		if err != nil {
			t.Fatal(err)
		}
		adapters = append(adapters, a)
	}
	keys := []string{"free", "lockstep", "broken"}
	for _, k := range keys {
		if _, err := sdb.ExecContext(ctx, "INSERT INTO `"+name+"` (`key`) VALUES (?)", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := raceRows(t, adapters, sdb, rl, name, "free", n, max); err != nil {
		t.Fatalf("released at once: %v", err)
	}
	lockstep := func() {
		var read sync.WaitGroup
		read.Add(n)
		setHook(t, func(context.Context) { read.Done(); read.Wait() }, adapters...)
	}
	lockstep()
	if err := raceRows(t, adapters, sdb, rl, name, "lockstep", n, max); err != nil {
		t.Fatalf("all reads before any write: %v", err)
	}
	lockstep()
	for _, a := range adapters {
		a.e.steer.noGuards = true
	}
	err := raceRows(t, adapters, sdb, rl, name, "broken", n, max)
	if err == nil {
		t.Fatal("the race check passed an increment guarded on the key alone")
	}
	t.Logf("read-then-write increment caught: %v", err)
}
