package pgxtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	sluicepgx "github.com/sluice-go/sluice/adapters/pgx"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
)

// maxConnsPerPool bounds each test pool: the server is shared by several
// test processes, and the suite opens several pools per test.
const maxConnsPerPool = 8

// openPool opens a new, independent pool on the PostgreSQL of dsn.
func openPool(ctx context.Context, dsn string, conns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = conns
	return pgxpool.NewWithConfig(ctx, cfg)
}

// harness is the adaptertest.Harness of this adapter: every MakeAdapter and
// MakePeer is a pool of its own, as separate application servers would have.
type harness struct {
	dsn    string
	mu     sync.Mutex
	pools  []*pgxpool.Pool
	schema *core.Schema
}

func maker(ctx context.Context, t *testing.T) (adaptertest.Harness, error) {
	return &harness{dsn: adaptertest.PostgresDSN(t)}, nil
}

func (h *harness) pool(ctx context.Context) (*pgxpool.Pool, error) {
	p, err := openPool(ctx, h.dsn, maxConnsPerPool)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.pools = append(h.pools, p)
	h.mu.Unlock()
	return p, nil
}

func (h *harness) MakeAdapter(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	p, err := h.pool(ctx)
	if err != nil {
		return nil, err
	}
	stmts, err := gen.DDL(s, gen.Postgres)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.schema = s
	h.mu.Unlock()
	for _, q := range stmts {
		if _, err := p.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return sluicepgx.New(ctx, p)
}

func (h *harness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	p, err := h.pool(ctx)
	if err != nil {
		return nil, err
	}
	return sluicepgx.New(ctx, p)
}

func (h *harness) Capabilities() adaptertest.Capabilities {
	return adaptertest.Capabilities{SeveralPools: true}
}

func (h *harness) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.schema != nil && len(h.pools) > 0 {
		for _, q := range gen.DropDDL(h.schema, gen.Postgres) {
			_, _ = h.pools[0].Exec(context.Background(), q)
		}
	}
	for _, p := range h.pools {
		p.Close()
	}
	h.pools = nil
}

// env is a pool, a schema with unique table names, the tables and a
// core.DB, for a focused test. Everything is dropped and closed when the
// test ends.
type env struct {
	pool   *pgxpool.Pool
	schema *core.Schema
	db     *core.DB
	ctx    context.Context
}

var tableSeq struct {
	sync.Mutex
	n int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	pool, err := openPool(ctx, adaptertest.PostgresDSN(t), maxConnsPerPool)
	mustNoErr(t, err)
	t.Cleanup(pool.Close)
	tableSeq.Lock()
	tableSeq.n++
	tag := fmt.Sprintf("pgx%d_%d", tableSeq.n, randTag())
	tableSeq.Unlock()
	naming := core.Naming{Tables: map[string]string{}}
	for _, m := range append(core.BuiltinModels(), adaptertest.CounterModel()) {
		naming.Tables[m.Name] = m.Name + "_" + tag
	}
	s := core.MustSchema(naming, adaptertest.CounterModel())
	stmts, err := gen.DDL(s, gen.Postgres)
	mustNoErr(t, err)
	t.Cleanup(func() {
		for _, q := range gen.DropDDL(s, gen.Postgres) {
			if _, err := pool.Exec(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	for _, q := range stmts {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db, err := sluicepgx.Open(ctx, pool, core.WithSchema(s))
	mustNoErr(t, err)
	return &env{pool: pool, schema: s, db: db, ctx: ctx}
}

func mustNoErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var errTest = errors.New("test rollback")

// randTag distinguishes this process's tables from those of other test
// processes sharing the database server.
func randTag() int64 { return (time.Now().UnixNano()/1000 + int64(os.Getpid())*7919) % 1_000_000 }

// BeginTx begins a pgx transaction on the pool behind db: the pgx.Tx a
// caller's handler holds (adaptertest.TxHandles).
func (h *harness) BeginTx(ctx context.Context, db *core.DB) (adaptertest.TxHandle, error) {
	p, ok := db.Adapter().(driver.Unwrapper).Unwrap().(*pgxpool.Pool)
	if !ok {
		return adaptertest.TxHandle{}, errors.New("the adapter does not run on a *pgxpool.Pool")
	}
	tx, err := p.Begin(ctx)
	if err != nil {
		return adaptertest.TxHandle{}, err
	}
	end := context.WithoutCancel(ctx)
	return adaptertest.TxHandle{Handle: tx, Commit: func() error { return tx.Commit(end) }, Rollback: func() error { return tx.Rollback(end) }}, nil
}
