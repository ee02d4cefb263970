package sluicesql

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

func TestInlineMySQL(t *testing.T) {
	q := "SELECT `a?` FROM t WHERE x = ? AND y = ? AND z = '?' AND w IN (?, ?) AND v = ?"
	got, ok, err := inlineMySQL(q, []any{int64(-5), "it's é", nil, true, ""})
	want := "SELECT `a?` FROM t WHERE x = -5 AND y = _utf8mb4 X'6974277320C3A9' AND z = '?' AND w IN (NULL, TRUE) AND v = _utf8mb4 X''"
	if err != nil || !ok || got != want {
		t.Fatalf("got %q %v %v, want %q", got, ok, err, want)
	}
	if _, ok, err := inlineMySQL("x = ?", []any{int64(1), int64(2)}); ok || err != nil {
		t.Fatalf("more arguments than placeholders: ok %v err %v", ok, err)
	}
	if _, ok, err := inlineMySQL("x = ? AND y = ?", []any{int64(1)}); ok || err != nil {
		t.Fatalf("fewer arguments than placeholders: ok %v err %v", ok, err)
	}
	if _, ok, _ := inlineMySQL("x = ?", []any{1.5}); ok {
		t.Fatal("a float has no literal here and must stay an argument")
	}
	if _, _, err := inlineMySQL("x = ?", []any{"\xff"}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("invalid UTF-8: %v, want ErrInvalid", err)
	}
}

// mysqlFixture opens MariaDB/MySQL on one connection and a rate-limit
// table of its own.
func mysqlFixture(t *testing.T, edit func(*mysql.Config)) (*sql.DB, *driver.Table, string) {
	t.Helper()
	dsn := os.Getenv("SLUICE_MYSQL_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MySQL/MariaDB is required in CI: set SLUICE_MYSQL_DSN")
		}
		t.Skip("MySQL/MariaDB not configured: set SLUICE_MYSQL_DSN to run this test")
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(cfg)
	}
	sdb, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdb.Close() })
	name := "sluice_value_" + strconv.Itoa(os.Getpid()) + "_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	if _, err := sdb.ExecContext(t.Context(), "CREATE TABLE `"+name+"` (`id` BIGINT AUTO_INCREMENT PRIMARY KEY, `key` VARCHAR(255) NOT NULL UNIQUE, `count` BIGINT NOT NULL DEFAULT 0, `last_request` BIGINT NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdb.ExecContext(context.Background(), "DROP TABLE `"+name+"`") })
	s := core.MustSchema(core.Naming{Tables: map[string]string{core.ModelRateLimit: name, core.ModelAPIKey: name + "_k"}})
	rl, _ := s.Table(core.ModelRateLimit)
	return sdb, rl, name
}

// questions reads the session's statement count on one connection.
func questions(t *testing.T, c *sql.Conn, status string) int64 {
	t.Helper()
	var name string
	var n int64
	if err := c.QueryRowContext(t.Context(), "SHOW SESSION STATUS LIKE '"+status+"'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMySQLRoundTrips counts, on one connection, the statements and
// prepared statements that IncrementValue and IncrementOne send.
func TestMySQLRoundTrips(t *testing.T) {
	for _, interpolate := range []bool{false, true} {
		t.Run("interpolateParams="+strconv.FormatBool(interpolate), func(t *testing.T) {
			ctx := t.Context()
			sdb, rl, name := mysqlFixture(t, func(c *mysql.Config) { c.InterpolateParams = interpolate })
			if _, err := sdb.ExecContext(ctx, "INSERT INTO `"+name+"` (`key`, `count`, `last_request`) VALUES ('k', 0, 100)"); err != nil {
				t.Fatal(err)
			}
			conn, err := sdb.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			a, err := New(ctx, FromConn(conn), Options{Dialect: MySQL})
			if err != nil {
				t.Fatal(err)
			}
			if a.inlines() == interpolate {
				t.Fatalf("inlines %v with interpolateParams %v", a.inlines(), interpolate)
			}
			where := cols(core.Eq("key", "k"), core.Lte("count", int64(10)))
			measure := func(op func() error) (stmts, prepares int64) {
				q0, p0 := questions(t, conn, "Questions"), questions(t, conn, "Com_stmt_prepare")
				if err := op(); err != nil {
					t.Fatal(err)
				}
				q1, p1 := questions(t, conn, "Questions"), questions(t, conn, "Com_stmt_prepare")
				return q1 - q0 - 2, p1 - p0 // the two SHOWs of the first reading are counted in the second
			}
			stmts, prepares := measure(func() error {
				v, ok, err := a.IncrementValue(ctx, rl, where, driver.Delta{Column: "count", By: 3}, nil)
				if err == nil && (!ok || v != 3) {
					err = errors.New("IncrementValue: want 3")
				}
				return err
			})
			if stmts != 1 || prepares != 0 {
				t.Errorf("IncrementValue: %d statements, %d prepared; want 1 and 0", stmts, prepares)
			}
			stmts, prepares = measure(func() error {
				rec, err := a.IncrementOne(ctx, rl, where, []driver.Delta{{Column: "count", By: 1}}, nil)
				if err == nil && rec == nil {
					err = errors.New("IncrementOne: no row")
				}
				return err
			})
			// Uncontended: the optimistic read and the guarded UPDATE.
			if stmts != 2 || prepares != 0 {
				t.Errorf("IncrementOne: %d statements, %d prepared; want 2 and 0", stmts, prepares)
			}
			// Inside a transaction: SELECT … FOR UPDATE and UPDATE.
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			ta := a.WithTx(tx)
			q0, p0 := txStatus(t, tx, "Questions"), txStatus(t, tx, "Com_stmt_prepare")
			rec, err := ta.IncrementOne(ctx, rl, where, []driver.Delta{{Column: "count", By: 1}}, nil)
			if err != nil || rec == nil {
				t.Fatalf("IncrementOne in a transaction: %v %v", rec, err)
			}
			q1, p1 := txStatus(t, tx, "Questions"), txStatus(t, tx, "Com_stmt_prepare")
			if stmts, prepares := q1-q0-2, p1-p0; stmts != 2 || prepares != 0 {
				t.Errorf("IncrementOne in a transaction: %d statements, %d prepared; want 2 and 0", stmts, prepares)
			}
		})
	}
}

// TestIncrementValueContract checks IncrementValue on MariaDB/MySQL with
// clientFoundRows off and on: the value after the write, no match,
// negative values, overflow refused with nothing written.
func TestIncrementValueContract(t *testing.T) {
	for _, found := range []bool{false, true} {
		t.Run("clientFoundRows="+strconv.FormatBool(found), func(t *testing.T) {
			ctx := t.Context()
			sdb, rl, name := mysqlFixture(t, func(c *mysql.Config) { c.ClientFoundRows = found })
			a, err := NewDB(ctx, sdb, MySQL)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sdb.ExecContext(ctx, "INSERT INTO `"+name+"` (`key`, `count`, `last_request`) VALUES ('k', 5, 100)"); err != nil {
				t.Fatal(err)
			}
			key := cols(core.Eq("key", "k"))
			check := func(by int64, where []driver.Where, set []driver.Assignment, want int64, wantOK bool) {
				t.Helper()
				v, ok, err := a.IncrementValue(ctx, rl, where, driver.Delta{Column: "count", By: by}, set)
				if err != nil || ok != wantOK || (ok && v != want) {
					t.Fatalf("IncrementValue %+d: %d %v %v, want %d %v", by, v, ok, err, want, wantOK)
				}
			}
			check(2, key, nil, 7, true)
			check(1, cols(core.Eq("key", "k"), core.Lt("count", int64(7))), nil, 0, false)
			check(1, cols(core.Eq("key", "nobody")), nil, 0, false)
			check(-20, key, []driver.Assignment{{Column: "last_request", Value: int64(200)}}, -13, true)
			_, _, err = a.IncrementValue(ctx, rl, key, driver.Delta{Column: "count", By: -1 << 63}, nil)
			if !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("overflow: %v, want ErrInvalid", err)
			}
			var c, last int64
			if err := sdb.QueryRowContext(ctx, "SELECT `count`, `last_request` FROM `"+name+"` WHERE `key` = 'k'").Scan(&c, &last); err != nil || c != -13 || last != 200 {
				t.Fatalf("stored %d %d %v, want -13 200", c, last, err)
			}
		})
	}
}

// raceIncrements releases n increments by one at once on a row of limit
// max and checks that exactly max succeed and that each value 1..max came
// back once.
func raceIncrements(t *testing.T, n int, max int64, incr func(ctx context.Context) (int64, bool, error)) error {
	ctx := t.Context()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		seen  = map[int64]int{}
		oks   int64
		first error
	)
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			v, ok, err := incr(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if ok {
				oks++
				seen[v]++
			}
		}()
	}
	close(start)
	wg.Wait()
	if first != nil {
		return first
	}
	if oks != max {
		return errors.New(strconv.FormatInt(oks, 10) + " increments succeeded, want " + strconv.FormatInt(max, 10))
	}
	for v := int64(1); v <= max; v++ {
		if seen[v] != 1 {
			return errors.New("value " + strconv.FormatInt(v, 10) + " came back " + strconv.Itoa(seen[v]) + " times")
		}
	}
	return nil
}

// TestIncrementValueRace: 64 concurrent increments on a limit of 10 admit
// exactly 10, each value once; a read-then-write increment without the
// guard in the write fails the same check.
func TestIncrementValueRace(t *testing.T) {
	ctx := t.Context()
	sdb, rl, name := mysqlFixture(t, nil)
	sdb.SetMaxOpenConns(64)
	a, err := NewDB(ctx, sdb, MySQL)
	if err != nil {
		t.Fatal(err)
	}
	const max = 10
	for i, key := range []string{"good", "broken"} {
		if _, err := sdb.ExecContext(ctx, "INSERT INTO `"+name+"` (`key`) VALUES (?)", key); err != nil {
			t.Fatal(err)
		}
		_ = i
	}
	err = raceIncrements(t, 64, max, func(ctx context.Context) (int64, bool, error) {
		return a.IncrementValue(ctx, rl, cols(core.Eq("key", "good"), core.Lt("count", int64(max))), driver.Delta{Column: "count", By: 1}, nil)
	})
	if err != nil {
		t.Fatalf("IncrementValue: %v", err)
	}
	// The broken increment reads, waits until every caller has read, then
	// writes guarded on the key alone.
	var read sync.WaitGroup
	read.Add(64)
	err = raceIncrements(t, 64, max, func(ctx context.Context) (int64, bool, error) {
		var c int64
		err := sdb.QueryRowContext(ctx, "SELECT `count` FROM `"+name+"` WHERE `key` = 'broken'").Scan(&c)
		read.Done()
		read.Wait()
		if err != nil || c >= max {
			return 0, false, err
		}
		v, ok, err := a.IncrementValue(ctx, rl, cols(core.Eq("key", "broken")), driver.Delta{Column: "count", By: 1}, nil)
		return v, ok, err
	})
	if err == nil {
		t.Fatal("the race check passed a read-then-write increment")
	}
	t.Logf("broken increment caught: %v", err)
}
