package sluicegorm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"gorm.io/gorm"
)

// Adapter is the adapter [New] returns: sluice's SQL engine, running its
// statements through gorm. It implements driver.Adapter, driver.Incrementer,
// driver.Transactor, driver.Unwrapper and driver.SchemaChecker.
type Adapter = sluicesql.Adapter

// openTimeout bounds the server probe New runs (version, dialect, MySQL
// time zone), so that an unreachable database fails New instead of hanging.
const openTimeout = 30 * time.Second

// New returns an adapter on db. db may be a transaction of yours
// (db.Begin(), or the tx of db.Transaction): every call then runs in it,
// you commit or roll it back, and the adapter's Transaction opens a
// savepoint. Conditions or a model already chained on db are ignored.
//
// New asks the server for its version and refuses with core.ErrUnsupported
// a dialect other than postgres, mysql or sqlite and a MySQL connection
// that reads times in another zone than UTC, and with core.ErrWrongDatabase
// a server that is not what the dialector says (see sluicesql.New for the
// classes of a failure to connect).
func New(db *gorm.DB) (*Adapter, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: sluicegorm.New: nil *gorm.DB", core.ErrInvalid)
	}
	if db.Config == nil || db.Dialector == nil || db.Statement == nil {
		return nil, fmt.Errorf("%w: sluicegorm.New: the *gorm.DB has no Dialector (open it with gorm.Open)", core.ErrInvalid)
	}
	if db.Error != nil {
		// Every statement run on db would fail with it.
		return nil, fmt.Errorf("%w: sluicegorm.New: the *gorm.DB carries an error: %w", core.ErrInvalid, db.Error)
	}
	d, err := dialectOf(db.Dialector.Name())
	if err != nil {
		return nil, err
	}
	// NewDB drops whatever the caller chained (Model, Where, Table, ...)
	// while keeping the connection pool or transaction, logger and plugins.
	db = db.Session(&gorm.Session{NewDB: true})
	base := executor{db: db, dollar: d == sluicesql.Postgres}
	var x sluicesql.Executor = pool{base}
	if inTx(db) {
		// The caller's transaction: the engine nests in it with savepoints
		// and never commits or rolls it back.
		x = base
	}
	root, _ := db.DB() // the pool, whose transactions BindTx takes; nil on a transaction
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	return sluicesql.New(ctx, x, sluicesql.Options{
		Dialect:     d,
		Placeholder: sluicesql.Question, // gorm binds ? as $n on PostgreSQL
		Codes:       translatedCodes(d),
		Name:        "sluicegorm",
		Unwrap:      db,
		TxUnwrap:    unwrapTx,
		BindTx:      bindTx(root, base.dollar),
	})
}

// Open wraps db in an adapter (see [New]) and the adapter in a core.DB,
// with the given core options (naming, schema, ...).
func Open(db *gorm.DB, opts ...core.Option) (*core.DB, error) {
	a, err := New(db)
	if err != nil {
		return nil, err
	}
	return core.New(a, opts...)
}

// dialectOf maps a gorm Dialector name to the engine's dialect.
func dialectOf(name string) (sluicesql.Dialect, error) {
	switch name {
	case "postgres":
		return sluicesql.Postgres, nil
	case "mysql":
		return sluicesql.MySQL, nil
	case "sqlite":
		return sluicesql.SQLite, nil
	}
	return 0, fmt.Errorf("%w: sluicegorm: dialect %q (supported: postgres, mysql, sqlite)", core.ErrUnsupported, name)
}

// inTx reports whether db runs on a transaction rather than a pool.
func inTx(db *gorm.DB) bool {
	c, ok := db.Statement.ConnPool.(gorm.TxCommitter)
	return ok && c != nil
}

// executor runs the engine's statements with db.Exec and db.Raw(...).Rows(),
// through gorm's Raw and Row callbacks: gorm's logger and plugins see every
// statement, and gorm turns each ? into its dialect's bind variable. When
// those chains hold only gorm's defaults, it does what they would do
// itself, logger included (see direct.go).
type executor struct {
	db     *gorm.DB
	dollar bool // PostgreSQL: gorm's bind variables are $1, $2, …
}

func (e executor) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if direct(e.db, false) {
		return e.execDirect(ctx, query, args)
	}
	// WithResult has gorm's RawExec keep the driver's sql.Result, whose
	// last insert id the engine's IncrementValue reads on MySQL. A
	// replaced gorm:raw may not fill it: the rows affected then stand
	// alone, and the last insert id is an error.
	res := gorm.WithResult()
	r := e.db.WithContext(ctx).Clauses(res).Exec(query, args...)
	if r.Error != nil {
		return nil, r.Error
	}
	if res.Result != nil {
		return res.Result, nil
	}
	return result(r.RowsAffected), nil
}

func (e executor) Query(ctx context.Context, query string, args ...any) (sluicesql.Rows, error) {
	if direct(e.db, true) {
		return e.queryDirect(ctx, query, args)
	}
	rows, err := e.db.WithContext(ctx).Raw(query, args...).Rows()
	if err != nil {
		return nil, err // not a nil *sql.Rows in a non-nil interface
	}
	return rows, nil
}

func (e executor) gormDB() *gorm.DB { return e.db }

// pool is an executor on a connection pool: the engine begins its own
// transactions on it.
type pool struct{ executor }

func (p pool) Begin(ctx context.Context) (sluicesql.Tx, error) {
	tx := p.db.WithContext(ctx).Begin()
	if tx.Error != nil {
		return nil, tx.Error
	}
	c, ok := tx.Statement.ConnPool.(gorm.TxCommitter)
	if !ok || c == nil {
		return nil, fmt.Errorf("sluicegorm: gorm's Begin returned a %T, not a transaction", tx.Statement.ConnPool)
	}
	return txExecutor{executor{db: tx.Session(&gorm.Session{NewDB: true}), dollar: p.dollar}, c}, nil
}

// txExecutor is a transaction the engine began. Commit and Rollback go to
// the transaction itself rather than gorm's Commit and Rollback, which
// would pile their errors onto the *gorm.DB that Unwrap hands out.
type txExecutor struct {
	executor
	c gorm.TxCommitter
}

func (t txExecutor) Commit(context.Context) error   { return t.c.Commit() }
func (t txExecutor) Rollback(context.Context) error { return t.c.Rollback() }

// unwrapTx is what Unwrap returns inside a transaction: its *gorm.DB, so
// that the caller's own gorm writes join it.
func unwrapTx(x sluicesql.Executor) any {
	if g, ok := x.(interface{ gormDB() *gorm.DB }); ok {
		return g.gormDB()
	}
	return x
}

// result is what gorm's Exec reports when its raw callback does not keep
// the driver's result: rows affected and no insert id.
type result int64

func (r result) RowsAffected() (int64, error) { return int64(r), nil }
func (r result) LastInsertId() (int64, error) {
	return 0, errors.New("sluicegorm: gorm's raw callback did not keep the driver's result, so the last insert id is unknown")
}

// translatedCodes gives the engine the code behind gorm's
// ErrDuplicatedKey: with gorm.Config.TranslateError, gorm replaces the
// driver's unique-violation error with it, and the code is lost.
func translatedCodes(d sluicesql.Dialect) sluicesql.Codes {
	unique := map[sluicesql.Dialect]string{sluicesql.Postgres: "23505", sluicesql.MySQL: "1062", sluicesql.SQLite: "2067"}[d]
	return func(err error) (string, bool) {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return unique, true
		}
		return "", false
	}
}
