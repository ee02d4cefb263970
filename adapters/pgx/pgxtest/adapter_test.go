package pgxtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	sluicepgx "github.com/sluice-go/sluice/adapters/pgx"
	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

const counter = "counter"

func (e *env) table(t testing.TB) string {
	tb, ok := e.schema.Table(counter)
	if !ok {
		t.Fatalf("no model %q", counter)
	}
	return `"` + tb.Name + `"`
}

func (e *env) count(t *testing.T, name string) int64 {
	t.Helper()
	n, err := e.db.Count(e.ctx, counter, core.Eq("name", name))
	mustNoErr(t, err)
	return n
}

func TestNewNil(t *testing.T) {
	for name, db := range map[string]sluicepgx.DB{
		"nil":               nil,
		"nil *pgxpool.Pool": (*pgxpool.Pool)(nil),
		"nil *pgx.Conn":     (*pgx.Conn)(nil),
	} {
		a, err := sluicepgx.New(context.Background(), db)
		if a != nil || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "nil DB") {
			t.Errorf("New(%s) = %v, %v; want ErrInvalid naming the nil DB", name, a, err)
		}
		if _, err := sluicepgx.Open(context.Background(), db); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Open(%s) = %v, want ErrInvalid", name, err)
		}
	}
}

// TestExecutorKinds checks which pgx objects sluice treats as pools (it
// begins its own transactions) and which as the caller's transaction.
func TestExecutorKinds(t *testing.T) {
	ctx := t.Context()
	dsn := adaptertest.PostgresDSN(t)
	pool, err := openPool(ctx, dsn, 2)
	mustNoErr(t, err)
	defer pool.Close()
	conn, err := pgx.Connect(ctx, dsn)
	mustNoErr(t, err)
	defer conn.Close(context.Background())
	tx, err := pool.Begin(ctx)
	mustNoErr(t, err)
	defer tx.Rollback(context.Background())
	for name, c := range map[string]struct {
		db       sluicepgx.DB
		beginner bool
	}{"*pgxpool.Pool": {pool, true}, "*pgx.Conn": {conn, true}, "pgx.Tx": {tx, false}} {
		_, ok := sluicepgx.Executor(c.db).(sluicesql.Beginner)
		if ok != c.beginner {
			t.Errorf("Executor(%s) is a Beginner: %v, want %v", name, ok, c.beginner)
		}
	}
}

// TestRows checks what the engine reads through the wrapper: column names,
// the Go types of each PostgreSQL type scanned into *any, and a query's
// error at Close.
func TestRows(t *testing.T) {
	ctx := t.Context()
	pool, err := openPool(ctx, adaptertest.PostgresDSN(t), 2)
	mustNoErr(t, err)
	defer pool.Close()
	x := sluicepgx.Executor(pool)

	rows, err := x.Query(ctx, `SELECT $1::bigint AS n, 'k'::varchar(9) AS s, true AS b,
		timestamptz '2026-01-02 03:04:05.678+02' AS t, 1.50::numeric AS d, 7::int4 AS i, NULL::text AS z`, int64(1)<<40)
	mustNoErr(t, err)
	cols, err := rows.Columns()
	mustNoErr(t, err)
	if got := strings.Join(cols, ","); got != "n,s,b,t,d,i,z" {
		t.Errorf("Columns() = %s, want n,s,b,t,d,i,z", got)
	}
	if !rows.Next() {
		t.Fatalf("no row: %v", rows.Err())
	}
	vals := make([]any, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	mustNoErr(t, rows.Scan(dest...))
	want := []any{int64(1) << 40, "k", true, time.Date(2026, 1, 2, 1, 4, 5, 678e6, time.UTC), "1.50", int32(7), nil}
	for i, w := range want {
		if fmt.Sprintf("%T %v", vals[i], vals[i]) != fmt.Sprintf("%T %v", w, w) {
			t.Errorf("column %s scanned into *any = %T %v, want %T %v", cols[i], vals[i], vals[i], w, w)
		}
	}
	if ts, ok := vals[3].(time.Time); ok && ts.Location() != time.UTC {
		t.Errorf("timestamptz in %v, want UTC", ts.Location())
	}
	if rows.Next() {
		t.Error("a second row")
	}
	mustNoErr(t, rows.Close())

	// Typed destinations pass through to pgx.
	rows, err = x.Query(ctx, `SELECT 5::bigint, 'five'`)
	mustNoErr(t, err)
	var n int64
	var s string
	if !rows.Next() {
		t.Fatalf("no row: %v", rows.Err())
	}
	mustNoErr(t, rows.Scan(&n, &s))
	mustNoErr(t, rows.Close())
	if n != 5 || s != "five" {
		t.Errorf("typed Scan = %d, %q; want 5, five", n, s)
	}

	// pgx reports a failing query when its rows end: Close returns it.
	rows, err = x.Query(ctx, `SELECT 1 / (0 * $1::int)`, int64(1))
	if err == nil {
		for rows.Next() {
		}
		err = rows.Close()
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.SQLState() != "22012" {
		t.Errorf("division by zero: Close() = %v, want the PgError 22012", err)
	}
}

func TestResult(t *testing.T) {
	ctx := t.Context()
	pool, err := openPool(ctx, adaptertest.PostgresDSN(t), 2)
	mustNoErr(t, err)
	defer pool.Close()
	res, err := sluicepgx.Executor(pool).Exec(ctx, `SELECT generate_series(1, $1::int)`, int64(3))
	mustNoErr(t, err)
	if n, err := res.RowsAffected(); n != 3 || err != nil {
		t.Errorf("RowsAffected() = %d, %v; want 3 from the command tag", n, err)
	}
	if _, err := res.LastInsertId(); err == nil || !strings.Contains(err.Error(), "RETURNING") {
		t.Errorf("LastInsertId() error = %v, want one pointing to RETURNING", err)
	}
	if _, err := sluicepgx.Executor(pool).Exec(ctx, `SELEC 1`); err == nil {
		t.Error("Exec of a syntax error succeeded")
	}
}

// TestBeginCommitRollback drives the transactions sluice begins on a pool
// and on a single connection directly.
func TestBeginCommitRollback(t *testing.T) {
	e := newEnv(t)
	conn, err := pgx.Connect(e.ctx, e.pool.Config().ConnString())
	mustNoErr(t, err)
	defer conn.Close(context.Background())
	ins := fmt.Sprintf(`INSERT INTO %s ("name") VALUES ($1)`, e.table(t))
	for name, db := range map[string]sluicepgx.DB{"pool": e.pool, "conn": conn} {
		b := sluicepgx.Executor(db).(sluicesql.Beginner)
		for _, commit := range []bool{false, true} {
			tx, err := b.Begin(e.ctx)
			mustNoErr(t, err)
			_, err = tx.Exec(e.ctx, ins, name)
			mustNoErr(t, err)
			if commit {
				mustNoErr(t, tx.Commit(e.ctx))
			} else {
				mustNoErr(t, tx.Rollback(e.ctx))
			}
		}
		if n := e.count(t, name); n != 1 {
			t.Errorf("%s: a rolled-back and a committed insert left %d rows, want 1", name, n)
		}
	}
}

// TestTracer checks that statements run through pgx itself: a QueryTracer
// on the pool sees sluice's UPDATE.
func TestTracer(t *testing.T) {
	e := newEnv(t)
	cfg := e.pool.Config()
	tr := &tracer{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	mustNoErr(t, err)
	defer pool.Close()
	db, err := sluicepgx.Open(e.ctx, pool, core.WithSchema(e.schema))
	mustNoErr(t, err)
	row, err := db.Create(e.ctx, counter, map[string]any{"name": "traced"})
	mustNoErr(t, err)
	_, ok, err := db.IncrementOne(e.ctx, core.IncrementRequest{Model: counter,
		Where: []core.Where{core.Eq("id", row.Int("id"))}, Increment: map[string]int64{"hits": 1}})
	if err != nil || !ok {
		t.Fatalf("IncrementOne = %v, %v", ok, err)
	}
	if n := tr.seen("UPDATE " + e.table(t)); n != 1 {
		t.Errorf("the tracer saw %d UPDATEs of the table, want 1; saw %q", n, tr.all())
	}
	if n := tr.seen("INSERT INTO " + e.table(t)); n != 1 {
		t.Errorf("the tracer saw %d INSERTs into the table, want 1; saw %q", n, tr.all())
	}
}

// tracer records the statements pgx runs.
type tracer struct {
	mu  sync.Mutex
	sql []string
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.sql = append(tr.sql, d.SQL)
	return ctx
}

func (tr *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (tr *tracer) seen(prefix string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, q := range tr.sql {
		if strings.HasPrefix(q, prefix) {
			n++
		}
	}
	return n
}

func (tr *tracer) all() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.sql...)
}

// TestUserTransaction runs sluice inside a pgx.Tx the caller began: its
// writes commit or roll back with the caller's, and a failing nested
// Transaction rolls back only its own writes (a savepoint).
func TestUserTransaction(t *testing.T) {
	e := newEnv(t)
	row, err := e.db.Create(e.ctx, counter, map[string]any{"name": "tx"})
	mustNoErr(t, err)
	where := []core.Where{core.Eq("id", row.Int("id"))}

	for _, commit := range []bool{false, true} {
		tx, err := e.pool.Begin(e.ctx)
		mustNoErr(t, err)
		txdb, err := sluicepgx.Open(e.ctx, tx, core.WithSchema(e.schema))
		mustNoErr(t, err)
		if got := txdb.Adapter().(driver.Unwrapper).Unwrap(); got != tx {
			t.Errorf("Unwrap() in the caller's transaction = %T, want the pgx.Tx", got)
		}
		_, ok, err := txdb.IncrementOne(e.ctx, core.IncrementRequest{Model: counter, Where: where, Increment: map[string]int64{"hits": 1}})
		if err != nil || !ok {
			t.Fatalf("IncrementOne in the caller's transaction: %v, %v", ok, err)
		}
		err = txdb.InTx(e.ctx, func(ctx context.Context, inner *core.DB) error {
			_, err := inner.Create(ctx, counter, map[string]any{"name": "kept"})
			return err
		})
		mustNoErr(t, err)
		err = txdb.InTx(e.ctx, func(ctx context.Context, inner *core.DB) error {
			if got := inner.Adapter().(driver.Unwrapper).Unwrap(); got != tx {
				t.Errorf("Unwrap() in a savepoint of the caller's transaction = %T, want the pgx.Tx", got)
			}
			if _, err := inner.Create(ctx, counter, map[string]any{"name": "undone"}); err != nil {
				return err
			}
			return errTest
		})
		if !errors.Is(err, errTest) {
			t.Fatalf("failing nested InTx = %v, want the function's error", err)
		}
		// The caller's transaction is still usable, and holds the kept row
		// and the increment but not the undone row.
		var kept, undone int64
		mustNoErr(t, tx.QueryRow(e.ctx, fmt.Sprintf(`SELECT count(*) FILTER (WHERE "name" = 'kept'), count(*) FILTER (WHERE "name" = 'undone') FROM %s`, e.table(t))).Scan(&kept, &undone))
		if kept != 1 || undone != 0 {
			t.Fatalf("inside the caller's transaction: %d kept, %d undone rows; want 1 and 0", kept, undone)
		}
		if commit {
			mustNoErr(t, tx.Commit(e.ctx))
		} else {
			mustNoErr(t, tx.Rollback(e.ctx))
		}
	}
	got, _, err := e.db.FindOne(e.ctx, counter, where...)
	mustNoErr(t, err)
	if got.Int("hits") != 1 || e.count(t, "kept") != 1 || e.count(t, "undone") != 0 {
		t.Errorf("after a rollback and a commit: hits %d, kept rows %d, undone rows %d; want 1, 1, 0",
			got.Int("hits"), e.count(t, "kept"), e.count(t, "undone"))
	}
}

// TestNestedRollback checks sluice's own transactions on a pool: an error
// from a nested InTx rolls back the nested writes only, an error from the
// outer one everything.
func TestNestedRollback(t *testing.T) {
	e := newEnv(t)
	err := e.db.InTx(e.ctx, func(ctx context.Context, tx *core.DB) error {
		if got, ok := tx.Adapter().(driver.Unwrapper).Unwrap().(pgx.Tx); !ok || got == nil {
			t.Errorf("Unwrap() in sluice's transaction = %T, want a pgx.Tx", tx.Adapter().(driver.Unwrapper).Unwrap())
		}
		if _, err := tx.Create(ctx, counter, map[string]any{"name": "outer"}); err != nil {
			return err
		}
		err := tx.InTx(ctx, func(ctx context.Context, inner *core.DB) error {
			if _, err := inner.Create(ctx, counter, map[string]any{"name": "inner"}); err != nil {
				return err
			}
			return errTest
		})
		if !errors.Is(err, errTest) {
			return fmt.Errorf("nested InTx = %v, want the function's error", err)
		}
		return nil
	})
	mustNoErr(t, err)
	if o, i := e.count(t, "outer"), e.count(t, "inner"); o != 1 || i != 0 {
		t.Errorf("after a failed nested transaction: %d outer, %d inner rows; want 1 and 0", o, i)
	}

	err = e.db.InTx(e.ctx, func(ctx context.Context, tx *core.DB) error {
		if _, err := tx.Create(ctx, counter, map[string]any{"name": "gone"}); err != nil {
			return err
		}
		return errTest
	})
	if !errors.Is(err, errTest) || e.count(t, "gone") != 0 {
		t.Errorf("failing InTx = %v and left %d rows; want the function's error and 0", err, e.count(t, "gone"))
	}
	if got := e.db.Adapter().(driver.Unwrapper).Unwrap(); got != e.pool {
		t.Errorf("Unwrap() = %T, want the pool", got)
	}
}

// TestConn runs sluice on a single *pgx.Conn: a pool of one connection.
func TestConn(t *testing.T) {
	e := newEnv(t)
	conn, err := pgx.Connect(e.ctx, e.pool.Config().ConnString())
	mustNoErr(t, err)
	defer conn.Close(context.Background())
	db, err := sluicepgx.Open(e.ctx, conn, core.WithSchema(e.schema))
	mustNoErr(t, err)
	row, err := db.Create(e.ctx, counter, map[string]any{"name": "conn", "slot": "s"})
	mustNoErr(t, err)
	got, ok, err := db.IncrementOne(e.ctx, core.IncrementRequest{Model: counter,
		Where: []core.Where{core.Eq("id", row.Int("id"))}, Increment: map[string]int64{"hits": 2}})
	if err != nil || !ok || got.Int("hits") != 2 {
		t.Fatalf("IncrementOne on a conn = %v, %v, %v; want hits 2", got, ok, err)
	}
	_, err = db.Create(e.ctx, counter, map[string]any{"name": "conn2", "slot": "s"})
	if !errors.Is(err, core.ErrConflict) {
		t.Errorf("Create with a duplicate slot = %v, want ErrConflict", err)
	}
	other, err := db.Create(e.ctx, counter, map[string]any{"name": "conn3", "slot": "t"})
	mustNoErr(t, err)
	_, _, err = db.Update(e.ctx, counter, []core.Where{core.Eq("id", other.Int("id"))}, map[string]any{"slot": "s"})
	var pgErr *pgconn.PgError
	if !errors.Is(err, core.ErrConflict) || !errors.As(err, &pgErr) || pgErr.SQLState() != "23505" {
		t.Errorf("Update to a taken slot = %v, want ErrConflict keeping pgx's PgError 23505", err)
	}
	if db.Adapter().(driver.Unwrapper).Unwrap() != conn {
		t.Error("Unwrap() is not the conn")
	}
}

// TestWithExecutor binds an adapter made once on the pool to a request's
// pgx.Tx: its writes roll back with the transaction, and Unwrap gives the
// transaction.
func TestWithExecutor(t *testing.T) {
	e := newEnv(t)
	a, err := sluicepgx.New(e.ctx, e.pool)
	mustNoErr(t, err)
	tx, err := e.pool.Begin(e.ctx)
	mustNoErr(t, err)
	defer tx.Rollback(context.Background())
	bound := a.WithExecutor(sluicepgx.Executor(tx))
	if got := bound.Unwrap(); got != tx {
		t.Errorf("Unwrap() of the bound adapter = %T, want the pgx.Tx", got)
	}
	txdb, err := core.New(bound, core.WithSchema(e.schema))
	mustNoErr(t, err)
	_, err = txdb.Create(e.ctx, counter, map[string]any{"name": "bound"})
	mustNoErr(t, err)
	var n int64
	mustNoErr(t, tx.QueryRow(e.ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE "name" = 'bound'`, e.table(t))).Scan(&n))
	if n != 1 {
		t.Fatalf("inside the transaction: %d rows, want 1", n)
	}
	mustNoErr(t, tx.Rollback(e.ctx))
	if n := e.count(t, "bound"); n != 0 {
		t.Errorf("after the rollback: %d rows, want 0", n)
	}
}
