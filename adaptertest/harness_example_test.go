package adaptertest_test

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// The harness below is the one README.md shows, compiled here so that it
// stays correct: TestReadmeHarness checks that the README's copy is this
// text, from "// README harness: begin" to "// README harness: end".

// README harness: begin

// sqlHarness runs the suite on an adapter over database/sql: a pool per
// subtest, the subtest's tables created on it, one more pool per peer, and
// everything dropped and closed at the end of the subtest.
type sqlHarness struct {
	driverName, dsn string
	newAdapter      func(*sql.DB) (driver.Adapter, error)                 // your adapter's constructor
	ddl             func(*core.Schema) (create, drop []string, err error) // your tables' statements

	mu    sync.Mutex
	pools []*sql.DB // pools[0] holds the tables
	drop  []string
}

// sqlHarnessMaker is the HarnessMaker to give adaptertest.Run. driverName is
// the database/sql driver your adapter runs on (import it for its side
// effect); dsn is adaptertest.PostgresDSN or adaptertest.MySQLDSN, which
// skip the test when their variable is not set (and fail it when CI=true);
// newAdapter and ddl are yours.
func sqlHarnessMaker(driverName string, dsn func(testing.TB) string, newAdapter func(*sql.DB) (driver.Adapter, error),
	ddl func(*core.Schema) (create, drop []string, err error)) adaptertest.HarnessMaker {
	return func(ctx context.Context, t *testing.T) (adaptertest.Harness, error) {
		return &sqlHarness{driverName: driverName, dsn: dsn(t), newAdapter: newAdapter, ddl: ddl}, nil
	}
}

func (h *sqlHarness) open() (*sql.DB, error) {
	db, err := sql.Open(h.driverName, h.dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(8) // the suite's subtests and other test binaries share the server
	db.SetMaxIdleConns(8) // the default 2 would reconnect all the time under the races
	h.mu.Lock()
	h.pools = append(h.pools, db)
	h.mu.Unlock()
	return db, nil
}

// MakeAdapter creates the tables of s, which the suite names for the
// subtest, so that subtests sharing the server never meet.
func (h *sqlHarness) MakeAdapter(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	db, err := h.open()
	if err != nil {
		return nil, err
	}
	create, drop, err := h.ddl(s)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.drop = drop // set first: Close drops what a failed create left
	h.mu.Unlock()
	for _, stmt := range create {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return h.newAdapter(db)
}

// MakePeer is another adapter on the same tables over a pool of its own,
// as a second application server would have.
func (h *sqlHarness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	db, err := h.open()
	if err != nil {
		return nil, err
	}
	return h.newAdapter(db)
}

// Capabilities declares what the suite cannot find out from the adapter:
// here, that MakePeer opens independent pools. Whether the adapter has a
// native IncrementOne and transactions the suite finds out by type
// assertion, and skips, with the reason, every case that needs what is
// missing.
func (h *sqlHarness) Capabilities() adaptertest.Capabilities {
	return adaptertest.Capabilities{SeveralPools: true}
}

func (h *sqlHarness) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pools) > 0 {
		for _, stmt := range h.drop {
			_, _ = h.pools[0].ExecContext(context.Background(), stmt) // best effort: the test is over
		}
	}
	for _, db := range h.pools {
		_ = db.Close()
	}
}

// README harness: end

// Example_databaseSQL shows the wiring of the harness above in an adapter's
// own test file, where myadapter.New is the adapter's constructor and gen
// (github.com/sluice-go/sluice/gen) writes the tables of any sluice schema:
//
//	func TestConformance(t *testing.T) {
//		adaptertest.Run(t, sqlHarnessMaker("pgx", adaptertest.PostgresDSN, myadapter.New, func(s *core.Schema) ([]string, []string, error) {
//			create, err := gen.DDL(s, gen.Postgres)
//			return create, gen.DropDDL(s, gen.Postgres), err
//		}))
//	}
//
// adaptertest cannot import gen or a driver, so this example has neither
// and is compiled, not run; TestSQLHarness runs the harness on a driver
// that records statements.
func Example_databaseSQL() {
	newAdapter := func(db *sql.DB) (driver.Adapter, error) {
		return nil, errors.New("your adapter's constructor goes here")
	}
	ddl := func(s *core.Schema) (create, drop []string, err error) {
		return nil, nil, errors.New("your tables' DDL goes here: gen.DDL and gen.DropDDL")
	}
	var _ adaptertest.HarnessMaker = sqlHarnessMaker("pgx", adaptertest.PostgresDSN, newAdapter, ddl)
}

// TestReadmeHarness: README.md shows the harness above, character for
// character, so that what a reader copies compiles.
func TestReadmeHarness(t *testing.T) {
	src, err := os.ReadFile("harness_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)// README harness: begin\n\n(.*?)\n// README harness: end`).FindSubmatch(src)
	if m == nil {
		t.Fatal("harness_example_test.go lacks its README markers")
	}
	want := string(m[1])
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not show the harness of harness_example_test.go verbatim; paste this into its first go block:\n%s", want)
	}
}

// recorder is a database/sql driver that runs nothing: it records the
// statements it is given and counts its connections, so that a test can
// watch the harness use its pools.
type recorder struct {
	mu           sync.Mutex
	stmts        []string
	open, closed int
}

// recorders maps each DSN given to the driver to the recorder behind it,
// so that every test run has a recorder of its own.
var recorders sync.Map

type recordingDriver struct{}

func (recordingDriver) Open(dsn string) (sqldriver.Conn, error) {
	r, ok := recorders.Load(dsn)
	if !ok {
		return nil, fmt.Errorf("recorder: unknown DSN %q", dsn)
	}
	return r.(*recorder).connect(), nil
}

func (r *recorder) connect() sqldriver.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open++
	return recorderConn{r}
}

func (r *recorder) log() ([]string, int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.stmts), r.open, r.closed
}

type recorderConn struct{ r *recorder }

func (c recorderConn) ExecContext(_ context.Context, q string, _ []sqldriver.NamedValue) (sqldriver.Result, error) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.stmts = append(c.r.stmts, q)
	return sqldriver.RowsAffected(0), nil
}

func (c recorderConn) Prepare(string) (sqldriver.Stmt, error) {
	return nil, errors.New("recorder: no Prepare")
}
func (c recorderConn) Begin() (sqldriver.Tx, error) { return nil, errors.New("recorder: no Begin") }
func (c recorderConn) Close() error {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.closed++
	return nil
}

func init() { sql.Register("adaptertest-recorder", recordingDriver{}) }

// TestSQLHarness runs the README's harness on the recording driver: the
// tables are created on the first pool before the adapter exists, peers get
// pools of their own, and Close drops the tables and closes every pool.
func TestSQLHarness(t *testing.T) {
	var pools []*sql.DB
	newAdapter := func(db *sql.DB) (driver.Adapter, error) {
		pools = append(pools, db)
		if err := db.PingContext(t.Context()); err != nil { // a connection, as a real adapter would open
			return nil, err
		}
		return memory.New(), nil
	}
	schema := core.MustSchema(core.Naming{})
	ddl := func(s *core.Schema) ([]string, []string, error) {
		if s != schema {
			t.Errorf("ddl got schema %p, want the suite's %p", s, schema)
		}
		return []string{"CREATE a", "CREATE b"}, []string{"DROP b", "DROP a"}, nil
	}
	rec := &recorder{}
	name := fmt.Sprintf("%s-%p", t.Name(), rec)
	recorders.Store(name, rec)
	t.Cleanup(func() { recorders.Delete(name) })
	dsn := func(testing.TB) string { return name }
	h, err := sqlHarnessMaker("adaptertest-recorder", dsn, newAdapter, ddl)(t.Context(), t)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.MakeAdapter(t.Context(), schema); err != nil {
		t.Fatal(err)
	}
	if stmts, _, _ := rec.log(); !slices.Equal(stmts, []string{"CREATE a", "CREATE b"}) {
		t.Errorf("after MakeAdapter: statements %q, want the two CREATEs", stmts)
	}
	for range 2 {
		if _, err := h.MakePeer(t.Context(), schema); err != nil {
			t.Fatal(err)
		}
	}
	if len(pools) != 3 || pools[0] == pools[1] || pools[1] == pools[2] || pools[0] == pools[2] {
		t.Errorf("adapter and peers got pools %p, want three distinct ones", pools)
	}
	h.Close()
	stmts, open, closed := rec.log()
	if !slices.Equal(stmts, []string{"CREATE a", "CREATE b", "DROP b", "DROP a"}) {
		t.Errorf("after Close: statements %q, want the CREATEs then the DROPs", stmts)
	}
	if open < 3 || open != closed {
		t.Errorf("connections: %d opened, %d closed; want at least one per pool, all closed", open, closed)
	}
}
