package adaptertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/core/route"
)

// The environment variables of a multi-primary cluster, such as the
// MariaDB Galera cluster scripts/galera/start.sh starts.
const (
	// EnvGalera lists one DSN per node, comma-separated, in
	// go-sql-driver/mysql form: root@tcp(127.0.0.1:23301)/test,…
	EnvGalera = "SLUICE_GALERA_DSNS"
	// EnvGaleraDir is the folder scripts/galera/start.sh ran the cluster
	// in; the tests that kill and restart a node need it.
	EnvGaleraDir = "SLUICE_GALERA_DIR"
)

// GaleraDSNs returns the DSNs of the Galera cluster's nodes from
// SLUICE_GALERA_DSNS, at least two, or skips the test (fails it when
// CI=true).
func GaleraDSNs(t testing.TB) []string {
	t.Helper()
	dsns := strings.Split(fromEnv(t, EnvGalera, "a MariaDB Galera cluster"), ",")
	if len(dsns) < 2 {
		t.Fatalf("%s names %d node, want one DSN per node of a cluster (at least 2)", EnvGalera, len(dsns))
	}
	return dsns
}

// GaleraDir returns the folder of the cluster scripts/galera/start.sh
// started, from SLUICE_GALERA_DIR, or skips the test: the tests that kill
// a node run only where they may (CI runs them in a step of their own,
// when no other suite uses the cluster).
func GaleraDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv(EnvGaleraDir)
	if d == "" {
		t.Skipf("no cluster to kill nodes of: set %s (scripts/galera/start.sh prints it)", EnvGaleraDir)
	}
	return d
}

// RunCluster runs the cases of [Run] that spread their callers over
// several pools, with a harness whose pools are on different nodes of one
// multi-primary cluster (MakeAdapter on the first node, each MakePeer on
// the next, round-robin): every race over several pools, every algorithm's
// burst over four pools, the API-key races over several pools, the
// fallback's burst, the policies' bursts over four pools, a burst through
// write combining on every node, a key created on one node verified at
// once on another, and a caller's transactions (In) on one node. Each node serves a
// share of the load; the outcomes must be as exact as on one server.
func RunCluster(t *testing.T, newHarness HarnessMaker) {
	open := func(t *testing.T, needs need) *Fixture {
		t.Helper()
		return newFixture(t, newHarness, needs)
	}
	runCases(t, clusterSuite(), open)
}

// clusterSuite is the cases of [RunCluster]: those of [Run] over several
// pools, then the cluster's own.
func clusterSuite() []dbCase {
	var cases []dbCase
	for _, c := range append(append(raceCases(), rateLimitCases()...), apiKeyCases()...) {
		if c.needs&txHandles != 0 && c.needs&severalPools != 0 {
			// A caller's transactions on several nodes: the cluster
			// certifies each at its COMMIT, the ORM's own, where a
			// conflict with another node's charge fails with the
			// driver's error 1213 for the caller to repeat; the race
			// counts every failed transaction as a broken contract.
			// Their charges on one node run (the cases on one pool).
			continue
		}
		if c.needs&(severalPools|txHandles) != 0 || strings.Contains(c.name, fmt.Sprintf("pools=%d", rlPools)) || c.name == "FallbackBurstGetsThrough" {
			cases = append(cases, c)
		}
	}
	return append(cases, clusterCases()...)
}

// The sentences of the contract the cluster's own cases check.
const (
	ruleCombinedOnEveryNode = "64 concurrent requests on one fresh key with max 10 through write combining on four pools " +
		"admit exactly 10, and the stored count is 10"
	ruleCreatedThenVerified = "a key created through one pool is valid at once through another (on a cluster: " +
		"created on one node, verified on the next), every time"
)

// clusterCases are the cases only [RunCluster] runs.
func clusterCases() []dbCase {
	return []dbCase{
		{"WriteCombiningBurst/pools=4", ruleCombinedOnEveryNode, 0, checked(func(ctx context.Context, f *Fixture) error {
			return burstOnFreshKey(ctx, f, ratelimit.FixedWindow, rlPools, 1, ratelimit.WithWriteCombining())
		})},
		{"KeyCreatedThenVerifiedElsewhere", ruleCreatedThenVerified, severalPools, checked(keyCreatedThenVerified)},
		{"RoutedBurst", ruleRoutedBurst, severalPools, checked(func(ctx context.Context, f *Fixture) error { return routedBurst(ctx, f) })},
		{"RoutedBurstWriteCombining", ruleRoutedBurst, severalPools, checked(func(ctx context.Context, f *Fixture) error {
			return routedBurst(ctx, f, ratelimit.WithWriteCombining())
		})},
	}
}

const ruleRoutedBurst = "64 concurrent requests on one fresh key with max 10 through two route.Routers over the cluster's nodes " +
	"(node-affine routing) admit exactly 10, and the stored count is 10"

// routedBurst races a burst over two Routers, each over one pool per node,
// as two application servers routing by key would.
func routedBurst(ctx context.Context, f *Fixture, opts ...ratelimit.Option) error {
	var nodes int
	switch h := f.Harness.(type) {
	case *clusterHarness:
		nodes = len(h.nodes)
	case *clusterTxHarness:
		nodes = len(h.nodes)
	}
	var ls []*ratelimit.Limiter
	clock := NewClock(time.UnixMilli(rlT0))
	for range 2 {
		var as []driver.Adapter
		for range nodes {
			a, err := f.Harness.MakePeer(ctx, f.Schema)
			if err != nil {
				return err
			}
			as = append(as, a)
		}
		r, err := route.New(as)
		if err != nil {
			return err
		}
		db, err := core.New(r, append([]core.Option{core.WithSchema(f.Schema)}, f.opts...)...)
		if err != nil {
			return err
		}
		l, err := ratelimit.New(ratelimit.Database(db), append([]ratelimit.Option{ratelimit.WithClock(clock.Now)}, opts...)...)
		if err != nil {
			return err
		}
		ls = append(ls, l)
	}
	admitted, err := rlRelease(ctx, ls, "routed", 1)
	if err != nil {
		return err
	}
	if admitted != rlMax {
		return fmt.Errorf("admitted %d, want exactly %d", admitted, rlMax)
	}
	count, _, err := rlRow(ctx, f, "routed")
	if err != nil {
		return err
	}
	if count != rlMax {
		return fmt.Errorf("stored count %d, want %d", count, rlMax)
	}
	return nil
}

// createdThenVerified is how many keys keyCreatedThenVerified creates on
// one pool and verifies at once on another: on a Galera cluster without
// causal reads about a third of them were missing on the second node.
const createdThenVerified = 60

func keyCreatedThenVerified(ctx context.Context, f *Fixture) error {
	dbs, err := f.DBs(2)
	if err != nil {
		return err
	}
	clock := NewClock(time.Now().Truncate(time.Millisecond))
	creator, err := apikey.New(dbs[0], apikey.WithClock(clock.Now))
	if err != nil {
		return err
	}
	verifier, err := apikey.New(dbs[1], apikey.WithClock(clock.Now))
	if err != nil {
		return err
	}
	invalid := 0
	for i := range createdThenVerified {
		plain, _, err := creator.Create(ctx, apikey.CreateParams{ReferenceID: fmt.Sprintf("owner-%d", i)})
		if err != nil {
			return fmt.Errorf("create %d: %w", i, err)
		}
		r, err := verifier.Verify(ctx, plain)
		if err != nil {
			return fmt.Errorf("verify %d: %w", i, err)
		}
		if !r.Valid {
			invalid++
		}
	}
	if invalid > 0 {
		return fmt.Errorf("%d of %d keys created through one pool were invalid when verified at once through another", invalid, createdThenVerified)
	}
	return nil
}

// OnNodes returns the harness maker of a cluster for [RunCluster]: one
// harness per node, made by node from that node's DSN (dsns lists them, or
// skips the test, as [GaleraDSNs] does). MakeAdapter creates the tables
// through the first node's harness; each MakePeer opens a pool through the
// next node's, round-robin, and returns once that node has the tables: it
// reads one of them through the new adapter, a read the SQL engine makes
// causal on a Galera node, so the node has applied the DDL first.
func OnNodes(dsns func(testing.TB) []string, node func(dsn string) HarnessMaker) HarnessMaker {
	return func(ctx context.Context, t *testing.T) (Harness, error) {
		c := &clusterHarness{}
		for _, dsn := range dsns(t) {
			h, err := node(dsn)(ctx, t)
			if err != nil {
				c.Close()
				return nil, err
			}
			c.nodes = append(c.nodes, h)
		}
		if _, ok := c.nodes[0].(TxHandles); ok {
			return &clusterTxHarness{c}, nil
		}
		return c, nil
	}
}

// clusterTxHarness is a clusterHarness over nodes whose harnesses begin
// the ORM's own transactions: each begins on the pool behind the DB it is
// given, whichever node that pool is on.
type clusterTxHarness struct{ *clusterHarness }

func (c *clusterTxHarness) BeginTx(ctx context.Context, db *core.DB) (TxHandle, error) {
	return c.nodes[0].(TxHandles).BeginTx(ctx, db)
}

// clusterHarness spreads a harness's pools over a cluster's nodes.
type clusterHarness struct {
	mu    sync.Mutex
	nodes []Harness
	next  int
}

func (c *clusterHarness) MakeAdapter(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	return c.nodes[0].MakeAdapter(ctx, s)
}

func (c *clusterHarness) MakePeer(ctx context.Context, s *core.Schema) (driver.Adapter, error) {
	c.mu.Lock()
	c.next++
	h := c.nodes[c.next%len(c.nodes)]
	c.mu.Unlock()
	a, err := h.MakePeer(ctx, s)
	if err != nil {
		return nil, err
	}
	if t, ok := s.Table(core.ModelRateLimit); ok {
		if _, err := a.FindOne(ctx, t, nil); err != nil {
			return nil, fmt.Errorf("the node does not have the tables: %w", err)
		}
	}
	return a, nil
}

func (c *clusterHarness) Capabilities() Capabilities { return Capabilities{SeveralPools: true} }

func (c *clusterHarness) Close() {
	for _, h := range c.nodes {
		h.Close()
	}
}
