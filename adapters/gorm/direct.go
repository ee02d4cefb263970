package sluicegorm

import (
	"context"
	"database/sql"
	"reflect"
	"sync"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
)

// The direct path. gorm runs a raw statement by building a Statement on a
// new *gorm.DB (a few dozen allocations), running its Raw or Row callback
// chain, and tracing it to its logger. The chain's default callbacks
// (gorm:raw, gorm:row) only hand the statement to the connection pool
// (Statement.ConnPool: the *sql.DB, the transaction, or gorm's prepared
// statement pool). When those defaults are the whole chain, the executor
// does the same itself: the statement, with gorm's own bind variables, goes
// to the same ConnPool, the error is translated as gorm would translate it
// (Config.TranslateError), and the logger's Trace is called with what gorm
// would give it (the time the statement began, its text and variables
// through ParamsFilter and the dialector's Explain, the rows affected, the
// error). The logger therefore sees every statement either way.
//
// Any other callback on the Raw or Row chain (a plugin such as otelgorm,
// dbresolver or prometheus, a callback of your own, a replaced or removed
// default, a Match condition), DryRun, and a DefaultContextTimeout send
// every statement through gorm instead, as they would without this path.
// The chains are read at each statement, so a callback registered after
// New is honoured from its next statement on.

// fnsIndex locates a gorm processor's compiled callback list (its fns,
// which gorm does not export), once. If a gorm release renames it, every
// statement goes through gorm.
var fnsIndex = func() []int {
	// (*gorm.DB).Callback() returns gorm's callbacks, whose Raw() returns
	// the processor.
	raw, ok := reflect.TypeOf((*gorm.DB).Callback).Out(0).MethodByName("Raw")
	if !ok || raw.Type.NumOut() != 1 || raw.Type.Out(0).Kind() != reflect.Pointer {
		return nil
	}
	f, ok := raw.Type.Out(0).Elem().FieldByName("fns")
	if !ok || f.Type != reflect.TypeFor[[]func(*gorm.DB)]() {
		return nil
	}
	return f.Index
}()

// onlyDefault reports whether a processor runs want and nothing else.
// gorm compiles a processor's chain into fns whenever a callback is
// registered, replaced or removed, with Match conditions already applied,
// so a replaced default or any added callback shows here as another
// function.
func onlyDefault(proc any, want func(*gorm.DB)) bool {
	p := reflect.ValueOf(proc)
	if fnsIndex == nil || p.Kind() != reflect.Pointer || p.IsNil() {
		return false
	}
	fns := p.Elem().FieldByIndex(fnsIndex)
	return fns.Len() == 1 && !fns.Index(0).IsNil() && fns.Index(0).Pointer() == reflect.ValueOf(want).Pointer()
}

// direct reports whether db's statements of this kind may skip gorm's
// Statement and callback chain (see the top of this file).
func direct(db *gorm.DB, query bool) bool {
	if db.DryRun || db.DefaultContextTimeout > 0 || db.Statement == nil || db.Statement.ConnPool == nil {
		return false
	}
	if query {
		return onlyDefault(db.Callback().Row(), callbacks.RowQuery)
	}
	return onlyDefault(db.Callback().Raw(), callbacks.RawExec)
}

// bindVars turns the engine's ? placeholders into the dialect's bind
// variables, as gorm's Statement would: $n on PostgreSQL, ? elsewhere.
func (e executor) bindVars(query string) string {
	if e.dollar {
		return sluicesql.Dollars(query)
	}
	return query
}

// execDirect is gorm's RawExec, logged and translated as gorm's processor
// does.
func (e executor) execDirect(ctx context.Context, query string, args []any) (sql.Result, error) {
	begin := time.Now()
	query = e.bindVars(query)
	res, err := e.db.Statement.ConnPool.ExecContext(ctx, query, args...)
	var n int64
	if err == nil {
		n, _ = res.RowsAffected()
	}
	err = e.finish(ctx, begin, query, args, n, err)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// queryDirect is gorm's RowQuery for Rows(), logged and translated as
// gorm's processor does (RowQuery reports -1 rows affected).
func (e executor) queryDirect(ctx context.Context, query string, args []any) (sluicesql.Rows, error) {
	begin := time.Now()
	query = e.bindVars(query)
	rows, err := e.db.Statement.ConnPool.QueryContext(ctx, query, args...)
	if err = e.finish(ctx, begin, query, args, -1, err); err != nil {
		if rows != nil {
			rows.Close()
		}
		return nil, err
	}
	return rows, nil
}

// finish translates err as gorm's AddError does and traces the statement
// to the logger as gorm's processor does.
func (e executor) finish(ctx context.Context, begin time.Time, query string, args []any, rows int64, err error) error {
	db := e.db
	if err != nil && db.TranslateError {
		if t, ok := db.Dialector.(gorm.ErrorTranslator); ok {
			err = t.Translate(err)
		}
	}
	if db.Logger == nil {
		return err
	}
	t := traces.Get().(*trace)
	t.db, t.ctx, t.query, t.args, t.rows = db, ctx, query, args, rows
	db.Logger.Trace(ctx, begin, t.fc, err)
	*t = trace{fc: t.fc}
	traces.Put(t)
	return err
}

// trace is the statement a logger's Trace may ask for. Its fc is bound
// once, when the pool makes it, so that tracing allocates nothing; like
// gorm's own, it is valid only during the Trace call.
type trace struct {
	db    *gorm.DB
	ctx   context.Context
	query string
	args  []any
	rows  int64
	fc    func() (string, int64)
}

var traces = sync.Pool{New: func() any {
	t := new(trace)
	t.fc = t.explain
	return t
}}

// explain is what gorm's processor gives the logger: the statement with
// its variables written in, after the logger's ParamsFilter if it has one.
func (t *trace) explain() (string, int64) {
	query, vars := t.query, t.args
	if f, ok := t.db.Logger.(gorm.ParamsFilter); ok {
		query, vars = f.ParamsFilter(t.ctx, query, vars...)
	}
	return t.db.Dialector.Explain(query, vars...), t.rows
}
