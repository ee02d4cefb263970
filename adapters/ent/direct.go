package sluiceent

import (
	"context"
	"reflect"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
)

// The direct path. ent's own *entsql.Driver and *entsql.Tx run a
// statement by handing it, as it is, to their database/sql ExecQuerier
// (the *sql.DB or *sql.Tx they wrap), after setting the session variables
// of entsql.WithVar when the context carries any; on the way they box the
// arguments and the result, a few allocations per statement that observe
// nothing. So when the executor's driver is exactly one of these two
// types and the context carries no session variables, the executor hands
// the statement to that ExecQuerier itself. A driver wrapped in anything
// else (dialect.Debug, a tracing or metrics driver, your own) is a
// different type, and every statement goes through it as before; so does
// every statement whose context has session variables.

// varsKey is the context key of entsql.WithVar, which ent does not
// export, found once from a context WithVar made. If an ent release
// changes how it stores them, varsKey is nil and every statement goes
// through ent.
var varsKey = func() any {
	ctx := entsql.WithVar(context.Background(), "sluiceent_probe", "1")
	v := reflect.ValueOf(ctx)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("key")
	if !f.IsValid() || f.Kind() != reflect.Interface || f.IsNil() {
		return nil
	}
	// The field is unexported, so its value cannot be taken out; the key
	// is a value of its type, comparable, made anew. Only a key that finds
	// the variables is used.
	t := f.Elem().Type()
	if !t.Comparable() {
		return nil
	}
	key := reflect.New(t).Elem().Interface()
	if ctx.Value(key) == nil || context.Background().Value(key) != nil {
		return nil
	}
	if _, ok := entsql.VarFromContext(ctx, "sluiceent_probe"); !ok {
		return nil
	}
	return key
}()

// plain returns the database/sql ExecQuerier under q when q is ent's own
// driver or transaction, unwrapped, and ctx sets no session variables;
// nil otherwise.
func plain(ctx context.Context, q dialect.ExecQuerier) entsql.ExecQuerier {
	var ex entsql.ExecQuerier
	switch d := q.(type) {
	case *entsql.Driver:
		ex = d.Conn.ExecQuerier
	case *entsql.Tx:
		ex = d.Conn.ExecQuerier
	default:
		return nil
	}
	if varsKey == nil || ctx.Value(varsKey) != nil {
		return nil
	}
	return ex
}
