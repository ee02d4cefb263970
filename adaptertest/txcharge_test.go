package adaptertest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// txMemHarness serves core's in-memory adapter with transaction handles:
// each is the tx of a DB.InTx held open until Commit or Rollback, one at
// a time (as SQLite's are), since the memory adapter refuses a
// transaction that would wait for another's row.
type txMemHarness struct {
	capabilityHarness
	mu sync.Mutex
}

var errHandleRolledBack = errors.New("rolled back by the handle")

func (h *txMemHarness) BeginTx(ctx context.Context, db *core.DB) (TxHandle, error) {
	h.mu.Lock()
	txc, end, done := make(chan *core.DB), make(chan bool), make(chan error, 1)
	go func() {
		done <- db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
			txc <- tx
			if <-end {
				return nil
			}
			return errHandleRolledBack
		})
	}()
	var tx *core.DB
	select {
	case tx = <-txc:
	case err := <-done:
		h.mu.Unlock()
		return TxHandle{}, err
	}
	finish := func(commit bool) error {
		end <- commit
		err := <-done
		h.mu.Unlock()
		if !commit && errors.Is(err, errHandleRolledBack) {
			return nil
		}
		return err
	}
	return TxHandle{Handle: tx, Commit: func() error { return finish(true) }, Rollback: func() error { return finish(false) }}, nil
}

// TestInTxCasesCatchBrokenCharging runs the transactional-charging cases
// with In and with a broken In that charges outside the caller's
// transaction, whose rollbacks then refund nothing: In passes, the broken
// one fails each case.
func TestInTxCasesCatchBrokenCharging(t *testing.T) {
	maker := func(context.Context, *testing.T) (Harness, error) {
		return &txMemHarness{capabilityHarness: capabilityHarness{adapter: memory.New(), pools: true}}, nil
	}
	outsideLimiter := func(l *ratelimit.Limiter, _ any) *ratelimit.Limiter { return l }
	outsideKeys := func(m *apikey.Manager, _ any) *apikey.Manager { return m }
	for _, v := range []struct {
		name         string
		good, broken func(testing.TB, *Fixture)
		needs        need
	}{
		{"limiter/keeps", rlInTxKeeps((*ratelimit.Limiter).In), rlInTxKeeps(outsideLimiter), txHandles},
		{"limiter/race", rlInTxRace(txPools, (*ratelimit.Limiter).In), rlInTxRace(txPools, outsideLimiter), txHandles | severalPools},
		{"keys/keeps", keyInTxKeeps((*apikey.Manager).In), keyInTxKeeps(outsideKeys), txHandles},
		{"keys/race", keyInTxRace(txPools, (*apikey.Manager).In), keyInTxRace(txPools, outsideKeys), txHandles | severalPools},
	} {
		t.Run(v.name, func(t *testing.T) {
			if rec := runRecorded(t, maker, dbCase{name: v.name, needs: v.needs, run: v.good}); rec.Failed() {
				t.Errorf("In failed: %s", rec.summary())
			}
			rec := runRecorded(t, maker, dbCase{name: v.name, needs: v.needs, run: v.broken})
			if !rec.Failed() {
				t.Fatal("the broken In, charging outside the transaction, passed")
			}
			t.Logf("the broken In is caught: %s", rec.summary())
		})
	}
}
