package core_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// TestCreateTablesUnsupported: an adapter without driver.TableCreator makes
// CreateTables fail with ErrUnsupported, naming the adapter and the way
// out, before any I/O.
func TestCreateTablesUnsupported(t *testing.T) {
	a, m := newNativeOnly()
	db := mustNew(t, a)
	err := db.CreateTables(context.Background())
	if !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("CreateTables = %v, want ErrUnsupported", err)
	}
	wrappedOnce(t, err, "CreateTables", "")
	for _, want := range []string{"core_test.nativeOnly", "driver.TableCreator", "migrations"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if n := m.Calls(); n != 0 {
		t.Errorf("%d adapter calls, want none", n)
	}
}

// TestCreateTablesMemory: the memory adapter, plain, without its native
// IncrementOne and inside a transaction, has nothing to create and
// succeeds, so code written for a database runs on it unchanged.
func TestCreateTablesMemory(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	for name, db := range map[string]*core.DB{
		"native":   mustNew(t, m),
		"fallback": mustNew(t, m.WithoutIncrementOne()),
	} {
		if err := db.CreateTables(ctx); err != nil {
			t.Errorf("%s: CreateTables = %v", name, err)
		}
		err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error { return tx.CreateTables(ctx) })
		if err != nil {
			t.Errorf("%s: CreateTables in a transaction = %v", name, err)
		}
	}
	db := mustNew(t, m)
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "k"})
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Count(ctx, core.ModelRateLimit); n != 1 || err != nil {
		t.Errorf("after a second CreateTables: %d rows, %v; want the row kept", n, err)
	}
}

// creator records CreateTables calls and fails CheckSchema on one table,
// or CreateTables itself.
type creator struct {
	*memory.Memory
	created   [][]*driver.Table
	createErr error
	unfit     string // physical table name CheckSchema refuses
	checked   []string
}

func (c *creator) CreateTables(_ context.Context, tables []*driver.Table) error {
	c.created = append(c.created, tables)
	return c.createErr
}

func (c *creator) CheckSchema(_ context.Context, t *driver.Table) error {
	c.checked = append(c.checked, t.Name)
	if t.Name == c.unfit {
		return fmt.Errorf("%w: table %q has no column %q", core.ErrSchema, t.Name, "count")
	}
	return nil
}

// TestCreateTablesChecksAfter: CreateTables hands the adapter the tables
// of the DB's own schema (physical names included), then checks every table, reporting an
// unfit one as ErrSchema under CreateTables and the model; an adapter
// error is wrapped once and skips the check.
func TestCreateTablesChecksAfter(t *testing.T) {
	ctx := context.Background()
	c := &creator{Memory: memory.New(), unfit: "rateLimit"}
	db := mustNew(t, c, core.WithNaming(core.Naming{Preset: core.BetterAuth}))
	err := db.CreateTables(ctx)
	if len(c.created) != 1 || !slices.Equal(c.created[0], db.Schema().Tables()) {
		t.Fatalf("adapter got tables %v, want the DB's own once", c.created)
	}
	if !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), `"count"`) {
		t.Fatalf("CreateTables = %v, want ErrSchema naming the column", err)
	}
	wrappedOnce(t, err, "CreateTables", core.ModelRateLimit)
	if len(c.checked) == 0 {
		t.Fatal("CheckSchema never ran")
	}

	c.unfit = ""
	c.checked = nil
	if err := db.CreateTables(ctx); err != nil {
		t.Fatalf("CreateTables on fit tables = %v", err)
	}
	if want := len(db.Schema().Tables()); len(c.checked) != want {
		t.Errorf("checked %v, want all %d tables", c.checked, want)
	}

	c.createErr = errors.New("disk full")
	c.checked = nil
	err = db.CreateTables(ctx)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("CreateTables = %v, want the adapter's error", err)
	}
	wrappedOnce(t, err, "CreateTables", "")
	if len(c.checked) != 0 {
		t.Errorf("checked %v after a failed creation, want nothing", c.checked)
	}
}

// TestCreateTablesZeroDB: a DB not made by New is refused, not a panic.
func TestCreateTablesZeroDB(t *testing.T) {
	var zero core.DB
	if err := zero.CreateTables(context.Background()); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("zero DB: %v, want ErrInvalid", err)
	}
	var nilDB *core.DB
	if err := nilDB.CreateTables(context.Background()); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("nil DB: %v, want ErrInvalid", err)
	}
}

// TestCheckSchemaLeavesOptionalTablesOut: a database made before the
// optional tables existed passes CheckSchema without models named; named,
// an optional model is checked as any other.
func TestCheckSchemaLeavesOptionalTablesOut(t *testing.T) {
	checked := map[string]bool{}
	db, err := core.New(checkingAdapter{memory.New(), checked})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CheckSchema(context.Background()); err != nil {
		t.Fatalf("CheckSchema(): %v", err)
	}
	if !checked[core.ModelRateLimit] || !checked[core.ModelAPIKey] || checked[core.ModelRerolledKey] || checked[core.ModelAPIKeyLimit] || checked[core.ModelAPIKeyRefill] {
		t.Fatalf("checked %v, want rateLimit and apikey only", checked)
	}
	if err := db.CheckSchema(context.Background(), core.ModelAPIKeyLimit); !errors.Is(err, core.ErrSchema) {
		t.Fatalf("CheckSchema(apikeyLimit): err = %v, want ErrSchema for the missing table", err)
	}
}

// checkingAdapter records the models checked and fails the optional ones,
// as a database without their tables would.
type checkingAdapter struct {
	*memory.Memory
	checked map[string]bool
}

func (a checkingAdapter) CheckSchema(_ context.Context, t *driver.Table) error {
	a.checked[t.Model] = true
	if t.Optional {
		return &core.Error{Op: "CheckSchema", Model: t.Model, Kind: core.ErrSchema}
	}
	return nil
}
