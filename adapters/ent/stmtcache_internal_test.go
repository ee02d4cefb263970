package sluiceent

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/sluice-go/sluice/core"
)

// recorder is a dialect.Driver that records statements and returns no rows.
type recorder struct {
	name  string
	calls []call
}

type call struct {
	q    string
	args []any
}

func (r *recorder) Exec(ctx context.Context, q string, args, v any) error {
	r.calls = append(r.calls, call{q, args.([]any)})
	return nil
}

func (r *recorder) Query(ctx context.Context, q string, args, v any) error {
	r.calls = append(r.calls, call{q, args.([]any)})
	*v.(*entsql.Rows) = entsql.Rows{ColumnScanner: noRows{}}
	return nil
}

func (r *recorder) Tx(context.Context) (dialect.Tx, error) { return dialect.NopTx(r), nil }
func (r *recorder) Close() error                           { return nil }
func (r *recorder) Dialect() string                        { return r.name }

type noRows struct{}

func (noRows) Close() error                            { return nil }
func (noRows) ColumnTypes() ([]*sql.ColumnType, error) { return nil, nil }
func (noRows) Columns() ([]string, error)              { return nil, nil }
func (noRows) Err() error                              { return nil }
func (noRows) Next() bool                              { return false }
func (noRows) NextResultSet() bool                     { return false }
func (noRows) Scan(...any) error                       { return nil }

// TestStatementCache checks, for every kind of request shape, that the
// second call takes the statement from the cache and sends exactly the
// statement and arguments that rendering through ent's builder produced.
func TestStatementCache(t *testing.T) {
	s := core.MustSchema(core.Naming{}, core.Model{Name: "counter", Fields: []core.Field{
		{Name: "id", Type: core.TypeInt, Primary: true},
		{Name: "name", Type: core.TypeString},
		{Name: "hits", Type: core.TypeInt},
		{Name: "budget", Type: core.TypeInt, Nullable: true},
		{Name: "seenAt", Type: core.TypeTime, Nullable: true},
		{Name: "slot", Type: core.TypeString, Unique: true, Nullable: true},
	}})
	tb, _ := s.Table("counter")
	at := time.Date(2024, 5, 6, 7, 8, 9, 10_000_000, time.UTC)
	type req struct {
		where []core.Where
		inc   []core.Delta
		set   []core.Assignment
	}
	reqs := map[string]req{
		"unique key": {where: []core.Where{core.Eq("slot", "a"), core.Lt("hits", int64(5))}, inc: []core.Delta{{Column: "hits", By: 1}}},
		"primary key, set": {where: []core.Where{core.Eq("id", int64(3))},
			inc: []core.Delta{{Column: "hits", By: -2}}, set: []core.Assignment{{Column: "seen_at", Value: at}, {Column: "budget", Value: nil}}},
		"several rows": {where: []core.Where{core.Eq("name", "n"), core.Gte("seen_at", at), core.Eq("budget", nil)},
			inc: []core.Delta{{Column: "hits", By: 1}, {Column: "budget", By: 4}}},
		"lists": {where: []core.Where{core.In("name", "a", "b"), core.NotIn("hits", int64(1), int64(2), int64(3)), core.Ne("slot", nil)},
			set: []core.Assignment{{Column: "name", Value: "z"}}},
		"no guard":    {inc: []core.Delta{{Column: "hits", By: 1}}},
		"unique NULL": {where: []core.Where{core.Eq("slot", nil)}, inc: []core.Delta{{Column: "hits", By: 1}}},
	}
	for _, d := range []string{dialect.Postgres, dialect.SQLite} {
		rec := &recorder{name: d}
		a, err := New(rec)
		if err != nil {
			t.Fatal(err)
		}
		for name, r := range reqs {
			rec.calls = nil
			for range 2 {
				if _, err := a.IncrementOne(t.Context(), tb, r.where, r.inc, r.set); err != nil {
					t.Fatalf("%s %s: %v", d, name, err)
				}
			}
			if len(rec.calls) != 2 || rec.calls[0].q != rec.calls[1].q || !reflect.DeepEqual(rec.calls[0].args, rec.calls[1].args) {
				t.Errorf("%s %s: rendered and cached calls differ:\n%#v", d, name, rec.calls)
			}
			if _, ok := a.stmts.get(updateShape(tb, r.where, r.inc, r.set)); !ok {
				t.Errorf("%s %s: statement not cached: %s", d, name, rec.calls[0].q)
			}
		}
		if n := a.stmts.n.Load(); n != int64(len(reqs)) {
			t.Errorf("%s: %d statements cached, want %d", d, n, len(reqs))
		}
	}
}
