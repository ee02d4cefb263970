package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// The round-trip counter wraps the real driver, so that every approach,
// raw or through an ORM, is counted the same way: one per statement sent
// (exec, query, prepare, statement execution) and one per BEGIN, COMMIT
// and ROLLBACK. A driver.ErrSkip answer is not counted: database/sql then
// prepares and executes instead (go-sql-driver/mysql without
// interpolateParams), and those calls are counted.

// openCounted opens a pool on driverName and dsn whose round trips are added
// to n.
func openCounted(driverName, dsn string, n *atomic.Int64) (*sql.DB, error) {
	probe, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, err
	}
	drv := probe.Driver()
	probe.Close()
	var inner driver.Connector
	if dc, ok := drv.(driver.DriverContext); ok {
		if inner, err = dc.OpenConnector(dsn); err != nil {
			return nil, err
		}
	} else {
		inner = dsnConnector{drv: drv, dsn: dsn}
	}
	return sql.OpenDB(&countingConnector{inner: inner, n: n}), nil
}

type dsnConnector struct {
	drv driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }

type countingConnector struct {
	inner driver.Connector
	n     *atomic.Int64
}

func (c *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{inner: conn, n: c.n}, nil
}

func (c *countingConnector) Driver() driver.Driver { return c.inner.Driver() }

// countingConn implements every optional interface database/sql looks for
// and forwards to the real connection, falling back the way database/sql
// itself would when the real connection lacks one: leaving one out would
// change how database/sql drives the connection (QueryerContext missing
// means prepare + query + close), and so change what is measured.
type countingConn struct {
	inner driver.Conn
	n     *atomic.Int64
}

var (
	_ driver.ConnBeginTx        = (*countingConn)(nil)
	_ driver.ConnPrepareContext = (*countingConn)(nil)
	_ driver.ExecerContext      = (*countingConn)(nil)
	_ driver.QueryerContext     = (*countingConn)(nil)
	_ driver.NamedValueChecker  = (*countingConn)(nil)
	_ driver.SessionResetter    = (*countingConn)(nil)
	_ driver.Validator          = (*countingConn)(nil)
	_ driver.Pinger             = (*countingConn)(nil)
)

// traceSQL, set by SLUICEBENCH_TRACE=1, prints each distinct statement
// text once to stderr with its first arguments: to see what an adapter
// sends.
var (
	traceSQL  = os.Getenv("SLUICEBENCH_TRACE") == "1"
	traceSeen sync.Map
)

func trace(kind, query string, args []driver.NamedValue) {
	if !traceSQL {
		return
	}
	if _, dup := traceSeen.LoadOrStore(query, true); dup {
		return
	}
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	fmt.Fprintf(os.Stderr, "\nSQL %s: %s %v\n", kind, query, vals)
}

func (c *countingConn) count(err error) {
	if !errors.Is(err, driver.ErrSkip) {
		c.n.Add(1)
	}
}

func (c *countingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var (
		s   driver.Stmt
		err error
	)
	if p, ok := c.inner.(driver.ConnPrepareContext); ok {
		s, err = p.PrepareContext(ctx, query)
	} else {
		s, err = c.inner.Prepare(query)
	}
	trace("prepare", query, nil)
	c.count(err)
	if err != nil {
		return nil, err
	}
	return &countingStmt{inner: s, conn: c}, nil
}

func (c *countingConn) Close() error { return c.inner.Close() }

func (c *countingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var (
		tx  driver.Tx
		err error
	)
	if b, ok := c.inner.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else {
		//lint:ignore SA1019 the fallback database/sql uses too
		tx, err = c.inner.Begin() //nolint:staticcheck
	}
	c.count(err)
	if err != nil {
		return nil, err
	}
	return &countingTx{inner: tx, n: c.n}, nil
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.inner.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := e.ExecContext(ctx, query, args)
	trace("exec", query, args)
	c.count(err)
	return r, err
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.inner.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := q.QueryContext(ctx, query, args)
	trace("query", query, args)
	c.count(err)
	return r, err
}

func (c *countingConn) CheckNamedValue(v *driver.NamedValue) error {
	if nc, ok := c.inner.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(v)
	}
	return driver.ErrSkip
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.inner.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *countingConn) IsValid() bool {
	if v, ok := c.inner.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *countingConn) Ping(ctx context.Context) error {
	if p, ok := c.inner.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

type countingTx struct {
	inner driver.Tx
	n     *atomic.Int64
}

func (t *countingTx) Commit() error   { t.n.Add(1); return t.inner.Commit() }
func (t *countingTx) Rollback() error { t.n.Add(1); return t.inner.Rollback() }

type countingStmt struct {
	inner driver.Stmt
	conn  *countingConn
}

var (
	_ driver.StmtExecContext   = (*countingStmt)(nil)
	_ driver.StmtQueryContext  = (*countingStmt)(nil)
	_ driver.NamedValueChecker = (*countingStmt)(nil)
	_ driver.ColumnConverter   = (*countingStmt)(nil)
)

func (s *countingStmt) Close() error  { return s.inner.Close() }
func (s *countingStmt) NumInput() int { return s.inner.NumInput() }

func (s *countingStmt) Exec(args []driver.Value) (driver.Result, error) {
	//lint:ignore SA1019 the legacy path, for drivers that have only it
	r, err := s.inner.Exec(args) //nolint:staticcheck
	s.conn.count(err)
	return r, err
}

func (s *countingStmt) Query(args []driver.Value) (driver.Rows, error) {
	//lint:ignore SA1019 the legacy path, for drivers that have only it
	r, err := s.inner.Query(args) //nolint:staticcheck
	s.conn.count(err)
	return r, err
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.inner.(driver.StmtExecContext)
	if !ok {
		vals, err := plainValues(args)
		if err != nil {
			return nil, err
		}
		return s.Exec(vals)
	}
	r, err := e.ExecContext(ctx, args)
	s.conn.count(err)
	return r, err
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.inner.(driver.StmtQueryContext)
	if !ok {
		vals, err := plainValues(args)
		if err != nil {
			return nil, err
		}
		return s.Query(vals)
	}
	r, err := q.QueryContext(ctx, args)
	s.conn.count(err)
	return r, err
}

func (s *countingStmt) CheckNamedValue(v *driver.NamedValue) error {
	if nc, ok := s.inner.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(v)
	}
	return s.conn.CheckNamedValue(v)
}

func (s *countingStmt) ColumnConverter(idx int) driver.ValueConverter {
	if cc, ok := s.inner.(driver.ColumnConverter); ok { //nolint:staticcheck
		return cc.ColumnConverter(idx)
	}
	return driver.DefaultParameterConverter
}

func plainValues(args []driver.NamedValue) ([]driver.Value, error) {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, errors.New("bench: the driver does not support named parameters")
		}
		out[i] = a.Value
	}
	return out, nil
}
