package sluicepgx

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
)

// DB is what sluice needs of pgx: *pgxpool.Pool, *pgx.Conn and pgx.Tx all
// have these methods.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

// transaction is how New recognises a transaction the caller began: pgx.Tx,
// or any wrapper of one that can commit and roll back.
type transaction interface {
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// New returns sluice's SQL engine running its statements on db, which is on
// PostgreSQL. It asks the server for its version, so give it a context with
// a deadline.
//
// A *pgxpool.Pool or *pgx.Conn is a pool: sluice begins, commits and rolls
// back its own transactions on it. A pgx.Tx (anything with Commit and
// Rollback) is the caller's transaction: sluice's writes commit or roll back
// with it, and its Transaction nests in it with savepoints. The adapter's
// Unwrap returns db, or inside one of sluice's transactions the pgx.Tx.
//
// A *pgx.Conn, like any pgx.Tx, serves one goroutine at a time: give sluice
// a *pgxpool.Pool to use it concurrently.
func New(ctx context.Context, db DB) (*sluicesql.Adapter, error) {
	switch x := db.(type) {
	case nil:
		return nil, errNilDB
	case *pgxpool.Pool:
		if x == nil {
			return nil, errNilDB
		}
	case *pgx.Conn:
		if x == nil {
			return nil, errNilDB
		}
	}
	return sluicesql.New(ctx, Executor(db), sluicesql.Options{
		Dialect:  sluicesql.Postgres,
		Name:     "sluicepgx",
		Unwrap:   db,
		TxUnwrap: unwrap,
		BindTx:   bindTx,
	})
}

// bindTx is the adapter's Options.BindTx: a pgx.Tx the caller began, on
// which the engine runs and which it never ends (core.DB.WithTx, and the
// limiter's and the API-key manager's In). pgx does not say which pool
// began a transaction: one of another database is not detected here.
func bindTx(h any) (sluicesql.Executor, error) {
	t, ok := h.(pgx.Tx)
	if !ok {
		return nil, sluicesql.NotATx("sluicepgx", h, "a pgx.Tx")
	}
	return executor{t}, nil
}

// ended marks pgx's error for a statement on a transaction that has ended
// as database/sql's, which the engine refuses as bad input.
func ended(err error) error {
	if errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("%w: %w", sql.ErrTxDone, err)
	}
	return err
}

var errNilDB = fmt.Errorf("sluicepgx: New: nil DB: %w", core.ErrInvalid)

// Open returns a core.DB on db: [New], then core.New with opts.
func Open(ctx context.Context, db DB, opts ...core.Option) (*core.DB, error) {
	a, err := New(ctx, db)
	if err != nil {
		return nil, err
	}
	return core.New(a, opts...)
}

// Executor returns db as the engine's executor: a [sluicesql.Beginner] for
// a pool or connection, a plain [sluicesql.Executor] for a transaction the
// caller owns. With (*sluicesql.Adapter).WithExecutor it binds an adapter
// made once by [New] to the caller's transaction of one request, without
// asking the server again:
//
//	sdb, _ := core.New(adapter.WithExecutor(sluicepgx.Executor(tx)))
func Executor(db DB) sluicesql.Executor {
	if _, ok := db.(transaction); ok {
		return executor{db}
	}
	return beginner{executor{db}}
}

// unwrap maps the engine's executor back to the pgx object it runs on.
func unwrap(x sluicesql.Executor) any {
	switch e := x.(type) {
	case beginner:
		return e.db
	case executor:
		return e.db
	case tx:
		return e.db
	}
	return x
}

// executor runs statements on a pgx pool, connection or transaction. pgx
// takes PostgreSQL's $n placeholders as they are.
type executor struct{ db DB }

func (e executor) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tag, err := e.db.Exec(ctx, query, args...)
	if err != nil {
		return nil, ended(err)
	}
	return result(tag.RowsAffected()), nil
}

func (e executor) Query(ctx context.Context, query string, args ...any) (sluicesql.Rows, error) {
	r, err := e.db.Query(ctx, query, args...)
	if err != nil {
		return nil, ended(err)
	}
	return newRows(r), nil
}

// beginner is an executor on a pool or connection, where sluice begins its
// own transactions.
type beginner struct{ executor }

func (b beginner) Begin(ctx context.Context) (sluicesql.Tx, error) {
	t, err := b.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return tx{executor{t}, t}, nil
}

// tx is a transaction sluice began.
type tx struct {
	executor
	tx pgx.Tx
}

func (t tx) Commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t tx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

// result is a statement's command tag as a sql.Result.
type result int64

func (r result) RowsAffected() (int64, error) { return int64(r), nil }

// LastInsertId is not available on PostgreSQL: the engine reads generated
// keys with RETURNING.
func (result) LastInsertId() (int64, error) {
	return 0, errors.New("sluicepgx: LastInsertId is not supported by PostgreSQL; use RETURNING")
}

// rows adapts pgx.Rows to the engine's Rows. One comes from a pool for
// each query and goes back when the engine closes it, with the column
// names it keeps for the next query.
type rows struct {
	pgx.Rows
	names []string
}

var rowsPool = sync.Pool{New: func() any { return new(rows) }}

func newRows(r pgx.Rows) *rows {
	w := rowsPool.Get().(*rows)
	w.Rows = r
	return w
}

// Columns returns the column names, valid until Close.
func (r *rows) Columns() ([]string, error) {
	fds := r.FieldDescriptions()
	if fds == nil {
		return nil, r.Err()
	}
	names := r.names[:0]
	for _, fd := range fds {
		names = append(names, fd.Name)
	}
	r.names = names
	return names, nil
}

// Scan reads the row into *any destinations the way pgx's Values decodes
// it, without Values' slice and with the usual types decoded directly:
// bigint, integer and smallint as int64, int32 and int16, boolean as bool,
// text and varchar as string. Other types go through pgx's codec, as Values does.
// Then what pgx decodes and core does not read is put in a form it does:
// times into UTC (pgx gives timestamptz in the local zone), and pgtype
// values such as Numeric into their driver.Value (text for a numeric).
// Destinations of other types are scanned by pgx itself.
func (r *rows) Scan(dest ...any) error {
	fds := r.FieldDescriptions()
	raw := r.RawValues()
	direct := len(dest) == len(fds) && len(raw) == len(fds)
	for _, d := range dest {
		if _, ok := d.(*any); !ok {
			direct = false
			break
		}
	}
	if !direct {
		return r.Rows.Scan(dest...)
	}
	for i, d := range dest {
		v, err := r.decode(&fds[i], raw[i])
		if err != nil {
			return err
		}
		switch x := v.(type) {
		case time.Time:
			v = x.UTC()
		case driver.Valuer:
			if v, err = x.Value(); err != nil {
				return err
			}
		}
		*d.(*any) = v
	}
	return nil
}

// decode turns one column's bytes into the value pgx's Values gives.
func (r *rows) decode(fd *pgconn.FieldDescription, src []byte) (any, error) {
	if src == nil {
		return nil, nil
	}
	switch fd.DataTypeOID {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
		return string(src), nil // the same bytes in both formats
	}
	if fd.Format == pgx.BinaryFormatCode {
		switch {
		case fd.DataTypeOID == pgtype.Int8OID && len(src) == 8:
			return int64(binary.BigEndian.Uint64(src)), nil
		case fd.DataTypeOID == pgtype.Int4OID && len(src) == 4:
			return int32(binary.BigEndian.Uint32(src)), nil
		case fd.DataTypeOID == pgtype.Int2OID && len(src) == 2:
			return int16(binary.BigEndian.Uint16(src)), nil
		case fd.DataTypeOID == pgtype.BoolOID && len(src) == 1:
			return src[0] == 1, nil
		}
	}
	m := r.Conn().TypeMap()
	if dt, ok := m.TypeForOID(fd.DataTypeOID); ok {
		return dt.Codec.DecodeValue(m, fd.DataTypeOID, fd.Format, src)
	}
	if fd.Format == pgx.TextFormatCode {
		return string(src), nil
	}
	return bytes.Clone(src), nil
}

// Close closes the rows and returns the query's error, if any: pgx reports
// a failed query only once its rows are closed. The wrapper then goes back
// to the pool: the engine closes each rows once and uses it no more.
func (r *rows) Close() error {
	if r.Rows == nil {
		return nil
	}
	r.Rows.Close()
	err := r.Err()
	clear(r.names)
	r.Rows, r.names = nil, r.names[:0]
	rowsPool.Put(r)
	return err
}
