package sluiceent

import (
	"database/sql"
	"fmt"
	"reflect"
	"unsafe"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
)

// bindTx is the adapter's Options.BindTx: an ent transaction the caller
// began, on which the engine runs and which it never ends (core.DB.WithTx,
// and the limiter's and the API-key manager's In). It takes
//   - a generated *ent.Tx (client.Tx(ctx)): the transaction driver its
//     builders run on, found in the Tx's config as ent's templates lay it
//     out, so that sluice's writes and the generated client's share it;
//   - a dialect.Tx, such as drv.Tx(ctx) returns.
//
// An *entsql.Tx whose *sql.Tx was begun on another pool than drv's (another
// database) is refused with core.ErrInvalid; behind other drivers and a
// generated *ent.Tx, ent does not say.
func bindTx(drv dialect.Driver) func(h any) (sluicesql.Executor, error) {
	var pool *sql.DB
	if d, ok := drv.(*entsql.Driver); ok {
		pool, _ = d.ExecQuerier.(*sql.DB)
	}
	return func(h any) (sluicesql.Executor, error) {
		tx, ok := h.(dialect.Tx)
		if !ok {
			if tx, ok = generatedTx(h); !ok {
				return nil, sluicesql.NotATx("sluiceent", h, "a generated *ent.Tx or a dialect.Tx")
			}
		}
		if t, ok := tx.(*entsql.Tx); ok {
			if st, ok := t.ExecQuerier.(*sql.Tx); ok {
				if err := sluicesql.CheckTxOf(st, pool); err != nil {
					return nil, fmt.Errorf("sluiceent: %w", err)
				}
			}
		}
		return conn{tx}, nil
	}
}

var driverType = reflect.TypeFor[dialect.Driver]()

// generatedTx finds the transaction driver of a generated *ent.Tx: ent's
// templates embed a config whose driver field is the Tx's txDriver, a
// dialect.Driver that is also a dialect.Tx (its Commit and Rollback do
// nothing: the *ent.Tx ends the transaction). The field is unexported, so
// it is read through its address; nothing is written.
func generatedTx(h any) (dialect.Tx, bool) {
	rv := reflect.ValueOf(h)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	cfg := rv.Elem().FieldByName("config")
	if !cfg.IsValid() || cfg.Kind() != reflect.Struct {
		return nil, false
	}
	f := cfg.FieldByName("driver")
	if !f.IsValid() || f.Type() != driverType {
		return nil, false
	}
	d, _ := reflect.NewAt(driverType, unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(dialect.Driver)
	tx, ok := d.(dialect.Tx)
	return tx, ok && d != nil
}
