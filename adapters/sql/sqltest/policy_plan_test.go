package sqltest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// recordAll is an executor that keeps the last IncrementAll statement
// it runs and its arguments.
type recordAll struct {
	sluicesql.Beginner
	q    *string
	args *[]any
}

func (r recordAll) Query(ctx context.Context, q string, args ...any) (sluicesql.Rows, error) {
	if strings.HasPrefix(q, "WITH l AS MATERIALIZED") {
		*r.q, *r.args = q, args
	}
	return r.Beginner.Query(ctx, q, args...)
}

// TestPolicyStatementReadsByIndex: the policy statement's generic plan,
// the one a connection keeps once it has run the statement a few times,
// finds each rule's row by its unique key on a table PostgreSQL has never
// analysed (a fresh table, until autovacuum reaches it), where it first
// planned as if the table held a few pages. An IN list or a join there
// read the whole table on every decision, slower with each row it gained.
func TestPolicyStatementReadsByIndex(t *testing.T) {
	e := postgresEnv(t)
	var q string
	var args []any
	l := limiterOver(t, e, recordAll{sluicesql.FromDB(e.sqldb), &q, &args})
	for range 2 { // the first creates the rows, the second is the statement
		if _, err := l.ConsumePolicy(e.ctx, "plan", statementPolicy, 1); err != nil {
			t.Fatal(err)
		}
	}
	if q == "" {
		t.Fatal("no IncrementAll statement ran")
	}
	table, _ := e.schema.Table(core.ModelRateLimit)
	conn, err := e.sqldb.Conn(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lits := make([]string, len(args))
	for i, v := range args {
		switch v := v.(type) {
		case string:
			lits[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		default:
			lits[i] = fmt.Sprint(v)
		}
	}
	exec := func(s string) {
		t.Helper()
		if _, err := conn.ExecContext(e.ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	explain := func() string {
		t.Helper()
		rows, err := conn.QueryContext(e.ctx, "EXPLAIN EXECUTE sluice_plan("+strings.Join(lits, ", ")+")")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return plan.String()
	}
	fill := func(from, to int) {
		exec(fmt.Sprintf(`INSERT INTO %q (%q, %q, %q) SELECT 'filler-' || i, 0, 0 FROM generate_series(%d, %d) i`,
			table.Name, mustColumn(t, table, "key"), mustColumn(t, table, "count"), mustColumn(t, table, "lastRequest"), from, to))
	}
	// The generic plan is made on the table as it is (a thousand rows,
	// never analysed) and kept: rows the table gains later do not make the
	// connection plan again.
	fill(1, 1000)
	exec("SET plan_cache_mode = force_generic_plan")
	exec("PREPARE sluice_plan AS " + q)
	explain()
	fill(1001, 4000)
	plan := explain()
	if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "Index Scan using") {
		t.Errorf("the generic plan does not find the rows by their key:\n%s", plan)
	}
}

// mustColumn returns the column name of a table's field.
func mustColumn(t *testing.T, table *driver.Table, field string) string {
	t.Helper()
	c, ok := table.Column(field)
	if !ok {
		t.Fatalf("no column for %q", field)
	}
	return c.Name
}
