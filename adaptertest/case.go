package adaptertest

import (
	"context"
	"strings"
	"testing"
)

// testCase is one case of the suite, for every entry point: its subtest's
// name, the sentence of the contract it checks (printed when it fails),
// what it needs of the adapter or the harness, and its body. F is what the
// body runs on: a [*Fixture] for [Run], a storage fixture for [RunStorage],
// concurrency stores for [RunConcurrencyStores], a process run for
// [RunProcesses].
//
// run fails t when the contract is broken. The suite's own tests run it
// with a recorder in place of t, which is how each case proves that a
// deliberately broken adapter makes it fail.
type testCase[F any] struct {
	name     string
	contract string
	needs    need
	run      func(t testing.TB, f F)
}

// need is a set of what cases need and what a fixture has. Each entry
// point finds out what its fixture has (by type assertion on the adapter
// or storage, or from what the harness declares) and skips, with the
// reason, every case that needs something missing.
type need uint32

const (
	transactions    need = 1 << iota // the adapter implements driver.Transactor
	nativeIncrement                  // the adapter implements driver.Incrementer
	severalPools                     // the harness declares SeveralPools
	// viaFallback runs the case through core's transaction fallback over
	// the adapter's FindOne and UpdateMany, in place of its own
	// IncrementOne: it needs both of the above.
	viaFallback
	keyTables        // the optional models' tables (rerolledKey, apikeyLimit): not a capability, they cost DDL
	boundedIncrement // the storage implements driver.BoundedIncrementer
	creates          // the storage implements keystore.Creator
	claims           // the storage implements keystore.Claimer
	rerolls          // the storage implements keystore.Rerollable
	sharesOwners     // the storage implements keystore.OwnerSharing
	severalClients   // the storage harness declares SeveralClients
	databaseTarget   // the process target has OpenDB
	storageTarget    // the process target has OpenStorage
	serializable     // the harness declares Serializable
	txHandles        // the harness implements TxHandles
)

// always is what every fixture has: what a case may need without
// anything to skip for.
const always = keyTables

// lacking is why a case that needs n cannot run on a fixture that has
// have, or "" when it can.
func (n need) lacking(have need) string {
	missing := n &^ (have | always)
	var why []string
	for bit := need(1); bit != 0 && bit <= missing; bit <<= 1 {
		if missing&bit != 0 {
			why = append(why, reason(bit, have))
		}
	}
	return strings.Join(why, "; ")
}

func reason(bit, have need) string {
	switch bit {
	case transactions:
		return "the adapter does not implement driver.Transactor"
	case nativeIncrement:
		return "the adapter does not implement driver.Incrementer"
	case severalPools:
		return "the harness does not declare SeveralPools"
	case viaFallback:
		if have&transactions == 0 {
			return "the adapter does not implement driver.Transactor, which core's fallback needs"
		}
		return "the adapter does not implement driver.Incrementer: the plain variant already runs through core's fallback"
	case boundedIncrement:
		return "the storage does not implement driver.BoundedIncrementer"
	case creates:
		return "the storage does not implement keystore.Creator"
	case claims:
		return "the storage does not implement keystore.Claimer"
	case rerolls:
		return "the storage does not implement keystore.Rerollable"
	case sharesOwners:
		return "the storage does not implement keystore.OwnerSharing"
	case severalClients:
		return "the harness does not declare SeveralClients"
	case databaseTarget:
		return "the target has no OpenDB"
	case storageTarget:
		return "the target has no OpenStorage"
	case serializable:
		return "the harness does not declare Serializable"
	case txHandles:
		return "the harness does not implement TxHandles (the ORM's own transactions)"
	}
	return "an unknown need"
}

// runCases runs each case as a subtest of t, on the fixture that open
// makes for it; open skips the subtest, with the reason, when the fixture
// lacks what the case needs. A failing case names its contract sentence.
func runCases[F any](t *testing.T, cases []testCase[F], open func(t *testing.T, needs need) F) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := open(t, c.needs) // may skip, with the reason
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("%s broke the contract: %s", c.name, c.contract)
				}
			})
			c.run(t, f)
		})
	}
}

// skipLacking skips t when have lacks something that needs names.
func skipLacking(t testing.TB, needs, have need) {
	t.Helper()
	if why := needs.lacking(have); why != "" {
		t.Skip(why)
	}
}

// fixture is what every entry point's fixture gives its cases: the
// context they run in, which ends with the subtest or at its deadline.
type fixture interface{ context() context.Context }

// checked adapts a body that reports a broken contract as an error (the
// races do, as their goroutines cannot fail a test) to a case's run.
func checked[F fixture](body func(ctx context.Context, f F) error) func(testing.TB, F) {
	return func(t testing.TB, f F) {
		t.Helper()
		if err := body(f.context(), f); err != nil {
			t.Error(err)
		}
	}
}
