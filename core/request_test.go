package core_test

import (
	"reflect"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

func TestWhereConstructors(t *testing.T) {
	cases := []struct {
		got  core.Where
		want core.Where
	}{
		{core.Eq("f", 1), core.Where{Field: "f", Op: driver.OpEq, Value: 1}},
		{core.Ne("f", 1), core.Where{Field: "f", Op: driver.OpNe, Value: 1}},
		{core.Lt("f", 1), core.Where{Field: "f", Op: driver.OpLt, Value: 1}},
		{core.Lte("f", 1), core.Where{Field: "f", Op: driver.OpLte, Value: 1}},
		{core.Gt("f", 1), core.Where{Field: "f", Op: driver.OpGt, Value: 1}},
		{core.Gte("f", 1), core.Where{Field: "f", Op: driver.OpGte, Value: 1}},
		{core.In("f", 1, 2), core.Where{Field: "f", Op: driver.OpIn, Value: []any{1, 2}}},
		{core.NotIn("f", "a"), core.Where{Field: "f", Op: driver.OpNotIn, Value: []any{"a"}}},
		{core.IsNull("f"), core.Eq("f", nil)},
		{core.IsNotNull("f"), core.Ne("f", nil)},
	}
	for _, c := range cases {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("got %#v, want %#v", c.got, c.want)
		}
	}
}

func TestNames(t *testing.T) {
	ops := map[driver.Op]string{driver.OpEq: "eq", driver.OpNe: "ne", driver.OpLt: "lt", driver.OpLte: "lte", driver.OpGt: "gt",
		driver.OpGte: "gte", driver.OpIn: "in", driver.OpNotIn: "not in", 0: "Op(0)", 42: "Op(42)"}
	for op, want := range ops {
		if got := op.String(); got != want {
			t.Errorf("Op(%d).String() = %q, want %q", uint8(op), got, want)
		}
	}
	types := map[driver.FieldType]string{driver.TypeString: "string", driver.TypeInt: "int", driver.TypeBool: "bool",
		driver.TypeTime: "time", 0: "FieldType(?)", 9: "FieldType(?)"}
	for ft, want := range types {
		if got := ft.String(); got != want {
			t.Errorf("FieldType(%d).String() = %q, want %q", uint8(ft), got, want)
		}
	}
}

// TestBuiltinModels pins the parts of SPEC sections 5 and 6 that adapters
// and the generator rely on.
func TestBuiltinModels(t *testing.T) {
	s := core.MustSchema(core.Naming{})
	check := func(model, field string, typ driver.FieldType, nullable, unique, index bool, def any) {
		t.Helper()
		tb, _ := s.Table(model)
		c, ok := tb.Column(field)
		if !ok {
			t.Fatalf("%s has no field %q", model, field)
		}
		f := c.Field
		if f.Type != typ || f.Nullable != nullable || f.Unique != unique || f.Index != index || !reflect.DeepEqual(f.Default, def) {
			t.Errorf("%s.%s = %+v", model, field, f)
		}
	}
	rl, ak := core.ModelRateLimit, core.ModelAPIKey
	check(rl, "key", driver.TypeString, false, true, false, nil)
	check(rl, "count", driver.TypeInt, false, false, false, int64(0))
	check(rl, "lastRequest", driver.TypeInt, false, false, true, int64(0))
	check(ak, "key", driver.TypeString, false, true, false, nil)
	check(ak, "referenceId", driver.TypeString, false, false, true, nil)
	check(ak, "enabled", driver.TypeBool, false, false, false, true)
	check(ak, "remaining", driver.TypeInt, true, false, false, nil)
	check(ak, "lastRefillAt", driver.TypeTime, true, false, false, nil)
	check(ak, "lastRequest", driver.TypeTime, true, false, false, nil)
	check(ak, "expiresAt", driver.TypeTime, true, false, false, nil)
	check(ak, "createdAt", driver.TypeTime, false, false, false, nil)
	check(ak, "rateLimitTimeWindow", driver.TypeInt, true, false, false, nil)
	if tb, _ := s.Table(ak); len(tb.Columns) != 22 {
		t.Errorf("apikey has %d fields, want 22", len(tb.Columns))
	}
}
