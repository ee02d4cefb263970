package core_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// dbCall is one request to a DB, reduced to its error.
type dbCall func(context.Context, *core.DB) error

// The call functions wrap one DB method each as a dbCall on model m with
// where clauses w.

func callIncrement(req core.IncrementRequest) dbCall {
	return func(ctx context.Context, db *core.DB) error { _, _, err := db.IncrementOne(ctx, req); return err }
}

func callCreate(m string, values map[string]any) dbCall {
	return func(ctx context.Context, db *core.DB) error { _, err := db.Create(ctx, m, values); return err }
}

func callFind(m string, w ...core.Where) dbCall {
	return func(ctx context.Context, db *core.DB) error { _, _, err := db.FindOne(ctx, m, w...); return err }
}

func callFindMany(m string, opts *core.FindOptions, w ...core.Where) dbCall {
	return func(ctx context.Context, db *core.DB) error { _, err := db.FindMany(ctx, m, w, opts); return err }
}

func callUpdate(m string, w []core.Where, set map[string]any) dbCall {
	return func(ctx context.Context, db *core.DB) error { _, _, err := db.Update(ctx, m, w, set); return err }
}

func callUpdateMany(m string, w []core.Where, set map[string]any) dbCall {
	return func(ctx context.Context, db *core.DB) error { _, err := db.UpdateMany(ctx, m, w, set); return err }
}

func callDelete(m string, w ...core.Where) dbCall {
	return func(ctx context.Context, db *core.DB) error { _, err := db.Delete(ctx, m, w...); return err }
}

func callDeleteMany(m string, w ...core.Where) dbCall {
	return func(ctx context.Context, db *core.DB) error { _, err := db.DeleteMany(ctx, m, w...); return err }
}

func callCount(m string, w ...core.Where) dbCall {
	return func(ctx context.Context, db *core.DB) error { _, err := db.Count(ctx, m, w...); return err }
}

// invalidCase is a malformed request and what its error must say.
type invalidCase struct {
	name  string
	op    string // the DB method the error must name
	model string
	call  dbCall
	want  string // part of the message describing the problem
}

// checkInvalid checks that every case fails with ErrInvalid, names the
// operation, the model and the problem, and never reaches the adapter: on
// the memory store with its native IncrementOne, then again without it, with
// " (fallback)" added to the subtest names.
func checkInvalid(t *testing.T, cases []invalidCase) {
	t.Helper()
	for _, native := range []bool{true, false} {
		m := memory.New()
		var a driver.Adapter = m
		if !native {
			a = m.WithoutIncrementOne()
		}
		db := mustNew(t, a)
		mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k", "count": 10})
		mustCreate(t, db, core.ModelAPIKey, apikeyValues("h"))
		for _, c := range cases {
			name := c.name
			if !native {
				name += " (fallback)"
			}
			t.Run(name, func(t *testing.T) { checkInvalidCase(t, m, db, c) })
		}
	}
}

// checkInvalidCase runs c on db, whose adapter m counts the calls it sees.
func checkInvalidCase(t *testing.T, m *memory.Memory, db *core.DB, c invalidCase) {
	t.Helper()
	before := m.Calls()
	err := c.call(context.Background(), db)
	if !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	for _, other := range []error{core.ErrConflict, core.ErrContention, core.ErrNotFound, core.ErrUnsupported} {
		if errors.Is(err, other) {
			t.Errorf("err %v also matches %v", err, other)
		}
	}
	if after := m.Calls(); after != before {
		t.Errorf("the adapter saw %d calls, want none", after-before)
	}
	wrappedOnce(t, err, c.op, c.model)
	if !strings.Contains(err.Error(), c.want) {
		t.Errorf("message %q does not say %q", err, c.want)
	}
}

// TestValidationOfNames checks that unknown models and fields are invalid,
// and that only the logical names count, not those of tables and columns.
func TestValidationOfNames(t *testing.T) {
	rl := core.ModelRateLimit
	dec := map[string]int64{"count": -1}
	k := core.Eq("key", "k")
	checkInvalid(t, []invalidCase{
		{"unknown model", "IncrementOne", "nope", callIncrement(core.IncrementRequest{Model: "nope", Increment: dec}), `unknown model "nope"`},
		{"empty model", "IncrementOne", "", callIncrement(core.IncrementRequest{Increment: dec}), `unknown model ""`},
		{"unknown model Create", "Create", "nope", callCreate("nope", map[string]any{"key": "a"}), `unknown model "nope"`},
		{"unknown model Count", "Count", "nope", callCount("nope"), `unknown model "nope"`},
		{"logical model name is not the table name", "FindOne", "rate_limit", callFind("rate_limit"), `unknown model "rate_limit"`},
		{"unknown where field", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{core.Eq("nope", 1)}, Increment: dec}), `unknown field "nope" in where`},
		{"physical column name in where", "FindOne", rl, callFind(rl, core.Eq("last_request", 1)), `unknown field "last_request" in where`},
		{"unknown Increment field", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: map[string]int64{"hits": 1}}), `unknown field "hits" in Increment`},
		{"unknown Set field", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: dec, Set: map[string]any{"nope": 1}}), `unknown field "nope"`},
		{"unknown Create field", "Create", rl, callCreate(rl, map[string]any{"key": "b", "nope": 1}), `unknown field "nope"`},
		{"unknown Update field", "Update", rl, callUpdate(rl, []core.Where{k}, map[string]any{"nope": 1}), `unknown field "nope"`},
		{"unknown UpdateMany field", "UpdateMany", rl, callUpdateMany(rl, nil, map[string]any{"nope": 1}), `unknown field "nope"`},
		{"unknown sort field", "FindMany", rl, callFindMany(rl, &core.FindOptions{SortBy: "nope"}), `unknown sort field "nope"`},
		{"unknown field Delete", "Delete", rl, callDelete(rl, core.Eq("nope", 1)), `unknown field "nope" in where`},
		{"unknown field DeleteMany", "DeleteMany", rl, callDeleteMany(rl, core.Eq("nope", 1)), `unknown field "nope" in where`},
		{"unknown field Count", "Count", rl, callCount(rl, core.Gt("nope", 1)), `unknown field "nope" in where`},
	})
}

// TestValidationOfOperators checks the pairs of operator and value that are
// invalid: nil with an ordering, ordered booleans, In with no list or an
// empty one or a nil in it, and operators that do not exist.
func TestValidationOfOperators(t *testing.T) {
	rl, ak := core.ModelRateLimit, core.ModelAPIKey
	dec := map[string]int64{"count": -1}
	var nilInt *int64
	checkInvalid(t, []invalidCase{
		{"lt nil", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{core.Lt("count", nil)}, Increment: dec}), "nil cannot be compared with lt"},
		{"lte nil", "FindOne", rl, callFind(rl, core.Lte("count", nil)), "nil cannot be compared with lte"},
		{"gt nil", "Count", rl, callCount(rl, core.Gt("count", nil)), "nil cannot be compared with gt"},
		{"gte typed nil pointer", "FindOne", ak, callFind(ak, core.Gte("remaining", nilInt)), "nil cannot be compared with gte"},
		{"bool lt", "FindOne", ak, callFind(ak, core.Lt("enabled", true)), "booleans cannot be ordered"},
		{"bool gte", "Count", ak, callCount(ak, core.Gte("rateLimitEnabled", false)), "booleans cannot be ordered"},
		{"in empty", "FindOne", rl, callFind(rl, core.In("key")), "needs at least one value"},
		{"not in empty", "DeleteMany", rl, callDeleteMany(rl, core.NotIn("key")), "needs at least one value"},
		{"in empty slice value", "Count", rl, callCount(rl, core.Where{Field: "key", Op: driver.OpIn, Value: []string{}}), "needs at least one value"},
		{"in non-list", "FindOne", rl, callFind(rl, core.Where{Field: "key", Op: driver.OpIn, Value: "k"}), "needs a list of values, got string"},
		{"not in non-list", "FindOne", rl, callFind(rl, core.Where{Field: "count", Op: driver.OpNotIn, Value: 3}), "needs a list of values, got int"},
		{"in nil", "FindOne", rl, callFind(rl, core.Where{Field: "key", Op: driver.OpIn, Value: nil}), "needs a list of values"},
		{"in nil element", "FindOne", rl, callFind(rl, core.In("key", "a", nil)), "nil in a list never matches"},
		{"not in nil element", "FindOne", ak, callFind(ak, core.NotIn("remaining", 1, nilInt)), "nil in a list never matches"},
		{"in element of the wrong type", "FindOne", rl, callFind(rl, core.In("count", 1, "two")), `field "count" is int, got string`},
		{"unknown op zero", "FindOne", rl, callFind(rl, core.Where{Field: "key", Value: "k"}), "unknown operator Op(0)"},
		{"unknown op 99", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{{Field: "key", Op: 99, Value: "k"}}, Increment: dec}), "unknown operator Op(99)"},
	})
}

// TestValidationOfValueTypes checks that a value of the wrong type for its
// field is invalid, in a where clause, in Set and in Create, and so is an
// integer that does not fit in int64.
func TestValidationOfValueTypes(t *testing.T) {
	rl, ak := core.ModelRateLimit, core.ModelAPIKey
	k := core.Eq("key", "k")
	checkInvalid(t, []invalidCase{
		{"string for int in where", "FindOne", rl, callFind(rl, core.Eq("count", "10")), `field "count" is int, got string`},
		{"float for int in where", "FindOne", rl, callFind(rl, core.Lt("count", 1.5)), `field "count" is int, got float64`},
		{"int for string in where", "FindOne", rl, callFind(rl, core.Eq("key", 7)), `field "key" is string, got int`},
		{"int for bool in where", "FindOne", ak, callFind(ak, core.Eq("enabled", 1)), `field "enabled" is bool, got int`},
		{"int for time in where", "FindOne", ak, callFind(ak, core.Lt("expiresAt", int64(5))), `field "expiresAt" is time, got int64`},
		{"string for time in Set", "IncrementOne", ak, callIncrement(core.IncrementRequest{Model: ak, Where: []core.Where{core.Eq("key", "h")}, Set: map[string]any{"lastRefillAt": "2026-01-01"}}), `field "lastRefillAt" is time, got string`},
		{"bytes for string in Create", "Create", rl, callCreate(rl, map[string]any{"key": []byte("b")}), `field "key" is string, got []uint8`},
		{"uint64 overflow in Set", "Update", rl, callUpdate(rl, []core.Where{k}, map[string]any{"count": uint64(math.MaxUint64)}), "overflows int64"},
		{"uint64 overflow in where", "FindOne", rl, callFind(rl, core.Eq("count", uint64(math.MaxInt64)+1)), "overflows int64"},
		{"named int type", "FindOne", rl, callFind(rl, core.Eq("lastRequest", myInt(1))), `field "lastRequest" is int, got core_test.myInt`},
	})
}

// TestValidationOfWrites checks IncrementOne's own rules and what no write
// may do: increment a field that is not an integer, set the primary key, or
// store NULL in a field that cannot hold it.
func TestValidationOfWrites(t *testing.T) {
	rl, ak := core.ModelRateLimit, core.ModelAPIKey
	dec := map[string]int64{"count": -1}
	var nilInt *int64
	k := core.Eq("key", "k")
	checkInvalid(t, []invalidCase{
		{"empty Increment and Set", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{k}}), "Increment and Set are both empty"},
		{"empty maps", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: map[string]int64{}, Set: map[string]any{}}), "Increment and Set are both empty"},
		{"same field in Increment and Set", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: dec, Set: map[string]any{"count": 3}}), `field "count" is in both Increment and Set`},
		{"increment a string", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: map[string]int64{"key": 1}}), `field "key" cannot be incremented`},
		{"increment a bool", "IncrementOne", ak, callIncrement(core.IncrementRequest{Model: ak, Increment: map[string]int64{"enabled": 1}}), `field "enabled" cannot be incremented`},
		{"increment a time", "IncrementOne", ak, callIncrement(core.IncrementRequest{Model: ak, Increment: map[string]int64{"lastRefillAt": 1000}}), `field "lastRefillAt" cannot be incremented`},
		{"increment the primary key", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: map[string]int64{"id": 1}}), `field "id" cannot be incremented`},
		{"set the primary key", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Set: map[string]any{"id": 9}}), `the primary key "id" cannot be set`},
		{"update the primary key", "Update", rl, callUpdate(rl, []core.Where{k}, map[string]any{"id": 9}), `the primary key "id" cannot be set`},
		{"update many the primary key", "UpdateMany", rl, callUpdateMany(rl, nil, map[string]any{"id": 9}), `the primary key "id" cannot be set`},
		{"NULL into non-nullable Set", "IncrementOne", rl, callIncrement(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Set: map[string]any{"lastRequest": nil}}), `field "lastRequest" cannot be NULL`},
		{"nil pointer into non-nullable", "Update", rl, callUpdate(rl, []core.Where{k}, map[string]any{"count": nilInt}), `field "count" cannot be NULL`},
		{"NULL into non-nullable Create", "Create", ak, callCreate(ak, merge(apikeyValues("n"), map[string]any{"enabled": nil})), `field "enabled" cannot be NULL`},
		{"NULL into the primary key", "Create", rl, callCreate(rl, map[string]any{"id": nil, "key": "b"}), `field "id" cannot be NULL`},
	})
}

// TestValidationOfRequiredFields checks that Create refuses a row without a
// value for a field that has no default.
func TestValidationOfRequiredFields(t *testing.T) {
	rl, ak := core.ModelRateLimit, core.ModelAPIKey
	checkInvalid(t, []invalidCase{
		{"required field missing", "Create", rl, callCreate(rl, map[string]any{"count": 1}), `field "key" is required`},
		{"required time missing", "Create", ak, callCreate(ak, map[string]any{"key": "h2", "referenceId": "u", "createdAt": fixedNow()}), `field "updatedAt" is required`},
		{"nothing given", "Create", rl, callCreate(rl, nil), `field "key" is required`},
	})
}

// TestValidationOfUpdateAndFindMany checks Update's and FindMany's own
// rules: something to set, and no negative limit or offset.
func TestValidationOfUpdateAndFindMany(t *testing.T) {
	rl := core.ModelRateLimit
	checkInvalid(t, []invalidCase{
		{"update nothing", "Update", rl, callUpdate(rl, []core.Where{core.Eq("key", "k")}, nil), "nothing to set"},
		{"update many nothing", "UpdateMany", rl, callUpdateMany(rl, nil, map[string]any{}), "nothing to set"},
		{"negative limit", "FindMany", rl, callFindMany(rl, &core.FindOptions{Limit: -1}), "negative limit"},
		{"negative offset", "FindMany", rl, callFindMany(rl, &core.FindOptions{Offset: -5}), "negative limit or offset"},
	})
}

// myInt is a named integer type, refused so that a time.Duration (nanoseconds)
// never slips into a millisecond column.
type myInt int64

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestValidRequestsReachTheAdapter is the counterpart of the TestValidationOf
// tests: the same kinds of requests, well formed, do reach the adapter, so
// checkInvalid's "no call" assertion is meaningful.
func TestValidRequestsReachTheAdapter(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	db := mustNew(t, m)
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k"})
	mustCreate(t, db, core.ModelAPIKey, apikeyValues("h"))
	calls := []struct {
		name string
		call func() error
	}{
		{"eq nil", func() error { _, _, err := db.FindOne(ctx, core.ModelAPIKey, core.Eq("remaining", nil)); return err }},
		{"ne nil", func() error { _, err := db.Count(ctx, core.ModelAPIKey, core.Ne("remaining", nil)); return err }},
		{"in ints of any type", func() error {
			_, err := db.Count(ctx, core.ModelRateLimit, core.In("count", 1, int8(2), uint16(3), int64(4)))
			return err
		}},
		{"in typed slice", func() error {
			_, err := db.Count(ctx, core.ModelRateLimit, core.Where{Field: "key", Op: driver.OpIn, Value: []string{"k", "j"}})
			return err
		}},
		{"in array", func() error {
			_, err := db.Count(ctx, core.ModelRateLimit, core.Where{Field: "key", Op: driver.OpNotIn, Value: [2]string{"k", "j"}})
			return err
		}},
		{"bool eq", func() error { _, err := db.Count(ctx, core.ModelAPIKey, core.Eq("enabled", true)); return err }},
		{"set only", func() error {
			_, _, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", "k")}, Set: map[string]any{"lastRequest": 5}})
			return err
		}},
		{"increment a nullable int", func() error {
			_, _, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelAPIKey, Increment: map[string]int64{"remaining": 1}})
			return err
		}},
		{"set a nullable field to NULL", func() error {
			_, _, err := db.Update(ctx, core.ModelAPIKey, nil, map[string]any{"remaining": nil, "expiresAt": (*time.Time)(nil)})
			return err
		}},
		{"create with the primary key", func() error {
			_, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"id": 100, "key": "x"})
			return err
		}},
		{"find many with zero options", func() error {
			_, err := db.FindMany(ctx, core.ModelRateLimit, nil, &core.FindOptions{})
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			before := m.Calls()
			if err := c.call(); err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if m.Calls() == before {
				t.Error("the adapter saw no call")
			}
		})
	}
}

// New refuses a typed-nil adapter and a nil option with ErrInvalid instead
// of panicking later.
func TestNewRefusesNils(t *testing.T) {
	var nilAdapter *memory.Memory
	if _, err := core.New(nilAdapter); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("typed-nil adapter: %v", err)
	}
	if _, err := core.New(memory.New(), nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("nil option: %v", err)
	}
}
