package sluicesql

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// laggingNode is an Executor on a Galera node that has not yet applied a
// row another node committed: a write matches nothing until the node has
// caught up, which it does on the engine's catch-up statement (a causal
// SELECT 1). It logs every statement by its first words.
type laggingNode struct {
	caughtUp bool
	log      []string
}

const catchUpStatement = causalReadPrefix + "SELECT 1"

func (n *laggingNode) Exec(_ context.Context, q string, _ ...any) (sql.Result, error) {
	n.log = append(n.log, strings.SplitN(q, " ", 2)[0])
	if n.caughtUp {
		return lastIDResult{rows: 1, id: 7}, nil
	}
	return lastIDResult{}, nil
}

func (n *laggingNode) Query(_ context.Context, q string, _ ...any) (Rows, error) {
	if q != catchUpStatement {
		return nil, errors.New("unexpected query " + q)
	}
	n.log = append(n.log, "catch-up")
	n.caughtUp = true
	return &oneValue{v: int64(1)}, nil
}

func (n *laggingNode) Begin(context.Context) (Tx, error) {
	n.log = append(n.log, "BEGIN")
	return nil, errors.New("no transactions here")
}

type lastIDResult struct{ rows, id int64 }

func (r lastIDResult) LastInsertId() (int64, error) { return r.id, nil }
func (r lastIDResult) RowsAffected() (int64, error) { return r.rows, nil }

// oneValue is the rows of SELECT 1.
type oneValue struct {
	v    any
	read bool
}

func (r *oneValue) Columns() ([]string, error) { return []string{"1"}, nil }
func (r *oneValue) Next() bool                 { read := r.read; r.read = true; return !read }
func (r *oneValue) Err() error                 { return nil }
func (r *oneValue) Close() error               { return nil }
func (r *oneValue) Scan(dest ...any) error {
	*dest[0].(*any) = r.v
	return nil
}

// onNode is an engine on MariaDB whose Exec results carry the last insert
// id, on a Galera node when galera.
func onNode(x Executor, galera bool) *Adapter {
	e := &engine{opts: Options{Name: "test"}, features: Features{Dialect: MySQL, MariaDB: true, CausalReads: galera}, t: MySQL.traits()}
	e.mysql.Store(mysqlLastID)
	return &Adapter{e: e, x: x, root: true}
}

var lagTable = driver.NewTable(driver.Table{Name: "counters", Columns: []driver.Column{
	{Name: "id", Field: driver.Field{Name: "id", Type: driver.TypeInt, Primary: true}},
	{Name: "budget", Field: driver.Field{Name: "budget", Type: driver.TypeInt}},
}})

// On a Galera node an autocommit write that matched nothing may have
// judged a row the node had not yet applied: the engine makes the node
// catch up and runs it once more, and only then reports a miss (or, here,
// the match). Elsewhere a miss is answered at once, with no statement
// more. Without the rerun the lagging node's first answer, a false miss,
// is the answer: this test fails.
func TestGaleraMissRerunAfterCatchingUp(t *testing.T) {
	where := []driver.Where{{Column: "budget", Op: driver.OpGt, Value: int64(0)}}
	inc := driver.Delta{Column: "budget", By: -1}

	node := &laggingNode{}
	v, ok, err := onNode(node, true).IncrementValue(context.Background(), lagTable, where, inc, nil)
	if err != nil || !ok || v != 7 {
		t.Fatalf("IncrementValue on a lagging Galera node: %d, %v, %v; want 7, true after catching up", v, ok, err)
	}
	if want := []string{"UPDATE", "catch-up", "UPDATE"}; !slices.Equal(node.log, want) {
		t.Errorf("statements %q, want %q", node.log, want)
	}

	node = &laggingNode{}
	if ok, err := onNode(node, true).Delete(context.Background(), lagTable, where); err != nil || !ok {
		t.Fatalf("Delete on a lagging Galera node: %v, %v; want true after catching up", ok, err)
	}
	if want := []string{"DELETE", "catch-up", "DELETE"}; !slices.Equal(node.log, want) {
		t.Errorf("statements %q, want %q", node.log, want)
	}

	node = &laggingNode{}
	if _, ok, err := onNode(node, false).IncrementValue(context.Background(), lagTable, where, inc, nil); err != nil || ok {
		t.Fatalf("IncrementValue off Galera matching nothing: %v, %v; want a miss", ok, err)
	}
	if want := []string{"UPDATE"}; !slices.Equal(node.log, want) {
		t.Errorf("statements off Galera %q, want %q", node.log, want)
	}
}

// A transaction of the engine's own on a Galera node begins only once the
// node has caught up, since the node ignores wsrep_sync_wait inside a
// transaction; elsewhere BEGIN is the first statement.
func TestGaleraTransactionBeginsCaughtUp(t *testing.T) {
	for _, galera := range []bool{true, false} {
		node := &laggingNode{}
		err := onNode(node, galera).Transaction(context.Background(), func(context.Context, driver.Adapter) error { return nil })
		if err == nil || errors.Is(err, core.ErrInvalid) {
			t.Fatalf("Transaction on an executor that cannot begin: %v, want its error", err)
		}
		want := []string{"BEGIN"}
		if galera {
			want = []string{"catch-up", "BEGIN"}
		}
		if !slices.Equal(node.log, want) {
			t.Errorf("galera %v: statements %q, want %q", galera, node.log, want)
		}
	}
}
