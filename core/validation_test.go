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

// TestValidation checks that every malformed request fails with ErrInvalid,
// names the operation, the model and the problem, and never reaches the
// adapter.
func TestValidation(t *testing.T) {
	rl := core.ModelRateLimit
	ak := core.ModelAPIKey
	inc := func(req core.IncrementRequest) func(context.Context, *core.DB) error {
		return func(ctx context.Context, db *core.DB) error {
			_, _, err := db.IncrementOne(ctx, req)
			return err
		}
	}
	create := func(model string, values map[string]any) func(context.Context, *core.DB) error {
		return func(ctx context.Context, db *core.DB) error {
			_, err := db.Create(ctx, model, values)
			return err
		}
	}
	find := func(model string, where ...core.Where) func(context.Context, *core.DB) error {
		return func(ctx context.Context, db *core.DB) error {
			_, _, err := db.FindOne(ctx, model, where...)
			return err
		}
	}
	findMany := func(model string, opts *core.FindOptions, where ...core.Where) func(context.Context, *core.DB) error {
		return func(ctx context.Context, db *core.DB) error {
			_, err := db.FindMany(ctx, model, where, opts)
			return err
		}
	}
	update := func(model string, where []core.Where, set map[string]any) func(context.Context, *core.DB) error {
		return func(ctx context.Context, db *core.DB) error {
			_, _, err := db.Update(ctx, model, where, set)
			return err
		}
	}
	updateMany := func(model string, where []core.Where, set map[string]any) func(context.Context, *core.DB) error {
		return func(ctx context.Context, db *core.DB) error {
			_, err := db.UpdateMany(ctx, model, where, set)
			return err
		}
	}
	del := func(model string, where ...core.Where) func(context.Context, *core.DB) error {
		return func(ctx context.Context, db *core.DB) error {
			_, err := db.Delete(ctx, model, where...)
			return err
		}
	}
	delMany := func(model string, where ...core.Where) func(context.Context, *core.DB) error {
		return func(ctx context.Context, db *core.DB) error {
			_, err := db.DeleteMany(ctx, model, where...)
			return err
		}
	}
	count := func(model string, where ...core.Where) func(context.Context, *core.DB) error {
		return func(ctx context.Context, db *core.DB) error {
			_, err := db.Count(ctx, model, where...)
			return err
		}
	}
	dec := map[string]int64{"count": -1}
	var nilInt *int64
	k := core.Eq("key", "k")

	cases := []struct {
		name  string
		op    string // the DB method the error must name
		model string
		call  func(context.Context, *core.DB) error
		want  string // part of the message describing the problem
	}{
		// unknown names
		{"unknown model", "IncrementOne", "nope", inc(core.IncrementRequest{Model: "nope", Increment: dec}), `unknown model "nope"`},
		{"empty model", "IncrementOne", "", inc(core.IncrementRequest{Increment: dec}), `unknown model ""`},
		{"unknown model Create", "Create", "nope", create("nope", map[string]any{"key": "a"}), `unknown model "nope"`},
		{"unknown model Count", "Count", "nope", count("nope"), `unknown model "nope"`},
		{"logical model name is not the table name", "FindOne", "rate_limit", find("rate_limit"), `unknown model "rate_limit"`},
		{"unknown where field", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{core.Eq("nope", 1)}, Increment: dec}), `unknown field "nope" in where`},
		{"physical column name in where", "FindOne", rl, find(rl, core.Eq("last_request", 1)), `unknown field "last_request" in where`},
		{"unknown Increment field", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: map[string]int64{"hits": 1}}), `unknown field "hits" in Increment`},
		{"unknown Set field", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: dec, Set: map[string]any{"nope": 1}}), `unknown field "nope"`},
		{"unknown Create field", "Create", rl, create(rl, map[string]any{"key": "b", "nope": 1}), `unknown field "nope"`},
		{"unknown Update field", "Update", rl, update(rl, []core.Where{k}, map[string]any{"nope": 1}), `unknown field "nope"`},
		{"unknown UpdateMany field", "UpdateMany", rl, updateMany(rl, nil, map[string]any{"nope": 1}), `unknown field "nope"`},
		{"unknown sort field", "FindMany", rl, findMany(rl, &core.FindOptions{SortBy: "nope"}), `unknown sort field "nope"`},
		{"unknown field Delete", "Delete", rl, del(rl, core.Eq("nope", 1)), `unknown field "nope" in where`},
		{"unknown field DeleteMany", "DeleteMany", rl, delMany(rl, core.Eq("nope", 1)), `unknown field "nope" in where`},
		{"unknown field Count", "Count", rl, count(rl, core.Gt("nope", 1)), `unknown field "nope" in where`},

		// operator and value pairs
		{"lt nil", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{core.Lt("count", nil)}, Increment: dec}), "nil cannot be compared with lt"},
		{"lte nil", "FindOne", rl, find(rl, core.Lte("count", nil)), "nil cannot be compared with lte"},
		{"gt nil", "Count", rl, count(rl, core.Gt("count", nil)), "nil cannot be compared with gt"},
		{"gte typed nil pointer", "FindOne", ak, find(ak, core.Gte("remaining", nilInt)), "nil cannot be compared with gte"},
		{"bool lt", "FindOne", ak, find(ak, core.Lt("enabled", true)), "booleans cannot be ordered"},
		{"bool gte", "Count", ak, count(ak, core.Gte("rateLimitEnabled", false)), "booleans cannot be ordered"},
		{"in empty", "FindOne", rl, find(rl, core.In("key")), "needs at least one value"},
		{"not in empty", "DeleteMany", rl, delMany(rl, core.NotIn("key")), "needs at least one value"},
		{"in empty slice value", "Count", rl, count(rl, core.Where{Field: "key", Op: driver.OpIn, Value: []string{}}), "needs at least one value"},
		{"in non-list", "FindOne", rl, find(rl, core.Where{Field: "key", Op: driver.OpIn, Value: "k"}), "needs a list of values, got string"},
		{"not in non-list", "FindOne", rl, find(rl, core.Where{Field: "count", Op: driver.OpNotIn, Value: 3}), "needs a list of values, got int"},
		{"in nil", "FindOne", rl, find(rl, core.Where{Field: "key", Op: driver.OpIn, Value: nil}), "needs a list of values"},
		{"in nil element", "FindOne", rl, find(rl, core.In("key", "a", nil)), "nil in a list never matches"},
		{"not in nil element", "FindOne", ak, find(ak, core.NotIn("remaining", 1, nilInt)), "nil in a list never matches"},
		{"in element of the wrong type", "FindOne", rl, find(rl, core.In("count", 1, "two")), `field "count" is int, got string`},
		{"unknown op zero", "FindOne", rl, find(rl, core.Where{Field: "key", Value: "k"}), "unknown operator Op(0)"},
		{"unknown op 99", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{{Field: "key", Op: 99, Value: "k"}}, Increment: dec}), "unknown operator Op(99)"},

		// wrong value types
		{"string for int in where", "FindOne", rl, find(rl, core.Eq("count", "10")), `field "count" is int, got string`},
		{"float for int in where", "FindOne", rl, find(rl, core.Lt("count", 1.5)), `field "count" is int, got float64`},
		{"int for string in where", "FindOne", rl, find(rl, core.Eq("key", 7)), `field "key" is string, got int`},
		{"int for bool in where", "FindOne", ak, find(ak, core.Eq("enabled", 1)), `field "enabled" is bool, got int`},
		{"int for time in where", "FindOne", ak, find(ak, core.Lt("expiresAt", int64(5))), `field "expiresAt" is time, got int64`},
		{"string for time in Set", "IncrementOne", ak, inc(core.IncrementRequest{Model: ak, Where: []core.Where{core.Eq("key", "h")}, Set: map[string]any{"lastRefillAt": "2026-01-01"}}), `field "lastRefillAt" is time, got string`},
		{"bytes for string in Create", "Create", rl, create(rl, map[string]any{"key": []byte("b")}), `field "key" is string, got []uint8`},
		{"uint64 overflow in Set", "Update", rl, update(rl, []core.Where{k}, map[string]any{"count": uint64(math.MaxUint64)}), "overflows int64"},
		{"uint64 overflow in where", "FindOne", rl, find(rl, core.Eq("count", uint64(math.MaxInt64)+1)), "overflows int64"},
		{"named int type", "FindOne", rl, find(rl, core.Eq("lastRequest", myInt(1))), `field "lastRequest" is int, got core_test.myInt`},

		// IncrementOne's own rules
		{"empty Increment and Set", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{k}}), "Increment and Set are both empty"},
		{"empty maps", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: map[string]int64{}, Set: map[string]any{}}), "Increment and Set are both empty"},
		{"same field in Increment and Set", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: dec, Set: map[string]any{"count": 3}}), `field "count" is in both Increment and Set`},
		{"increment a string", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: map[string]int64{"key": 1}}), `field "key" cannot be incremented`},
		{"increment a bool", "IncrementOne", ak, inc(core.IncrementRequest{Model: ak, Increment: map[string]int64{"enabled": 1}}), `field "enabled" cannot be incremented`},
		{"increment a time", "IncrementOne", ak, inc(core.IncrementRequest{Model: ak, Increment: map[string]int64{"lastRefillAt": 1000}}), `field "lastRefillAt" cannot be incremented`},
		{"increment the primary key", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Increment: map[string]int64{"id": 1}}), `field "id" cannot be incremented`},
		{"set the primary key", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Set: map[string]any{"id": 9}}), `the primary key "id" cannot be set`},
		{"update the primary key", "Update", rl, update(rl, []core.Where{k}, map[string]any{"id": 9}), `the primary key "id" cannot be set`},
		{"update many the primary key", "UpdateMany", rl, updateMany(rl, nil, map[string]any{"id": 9}), `the primary key "id" cannot be set`},
		{"NULL into non-nullable Set", "IncrementOne", rl, inc(core.IncrementRequest{Model: rl, Where: []core.Where{k}, Set: map[string]any{"lastRequest": nil}}), `field "lastRequest" cannot be NULL`},
		{"nil pointer into non-nullable", "Update", rl, update(rl, []core.Where{k}, map[string]any{"count": nilInt}), `field "count" cannot be NULL`},
		{"NULL into non-nullable Create", "Create", ak, create(ak, merge(apikeyValues("n"), map[string]any{"enabled": nil})), `field "enabled" cannot be NULL`},
		{"NULL into the primary key", "Create", rl, create(rl, map[string]any{"id": nil, "key": "b"}), `field "id" cannot be NULL`},

		// Create's required fields
		{"required field missing", "Create", rl, create(rl, map[string]any{"count": 1}), `field "key" is required`},
		{"required time missing", "Create", ak, create(ak, map[string]any{"key": "h2", "referenceId": "u", "createdAt": fixedNow()}), `field "updatedAt" is required`},
		{"nothing given", "Create", rl, create(rl, nil), `field "key" is required`},

		// Update's and FindMany's own rules
		{"update nothing", "Update", rl, update(rl, []core.Where{k}, nil), "nothing to set"},
		{"update many nothing", "UpdateMany", rl, updateMany(rl, nil, map[string]any{}), "nothing to set"},
		{"negative limit", "FindMany", rl, findMany(rl, &core.FindOptions{Limit: -1}), "negative limit"},
		{"negative offset", "FindMany", rl, findMany(rl, &core.FindOptions{Offset: -5}), "negative limit or offset"},
	}

	for _, native := range []bool{true, false} {
		m := memory.New()
		var a driver.Adapter = m
		if !native {
			a = m.WithoutIncrementOne()
		}
		db := mustNew(t, a)
		mustCreate(t, db, rl, map[string]any{"key": "k", "count": 10})
		mustCreate(t, db, ak, apikeyValues("h"))
		for _, c := range cases {
			name := c.name
			if !native {
				name += " (fallback)"
			}
			t.Run(name, func(t *testing.T) {
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
			})
		}
	}
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

// TestValidRequestsReachTheAdapter is the counterpart of TestValidation: the
// same kinds of requests, well formed, do reach the adapter, so the "no call"
// assertions above are meaningful.
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
