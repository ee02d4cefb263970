package apikey

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/memory"
)

// TestNamedLimits: a verification spends the named limits it names, with
// their costs, together with the key's quota; a limit without room denies
// it with RATE_LIMITED naming the limit, and nothing is spent anywhere.
func TestNamedLimits(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		key, k := e.create(t, CreateParams{Remaining: quota(100), RateLimit: noRateLimit(), Limits: map[string]NamedLimit{
			"requests": {Max: 3, Window: time.Minute},
			"tokens":   {Max: 100, Window: time.Hour},
		}})
		if got := k.Limits["tokens"]; got.Max != 100 || got.Window != time.Hour || got.Count != 0 {
			t.Fatalf("created key's tokens limit %+v", got)
		}
		spend := func(tokens int64) Result {
			return e.verify(t, key, LimitCost("requests", 1), LimitCost("tokens", tokens))
		}
		r := spend(60)
		wantCode(t, r, "")
		if u := r.Key.Limits["tokens"]; u.Count != 60 || !u.WindowStart.Equal(epoch) || r.Key.Limits["requests"].Count != 1 {
			t.Fatalf("after the first verification: %+v", r.Key.Limits)
		}
		r = spend(50) // 110 tokens: over the limit
		wantCode(t, r, CodeRateLimited)
		if r.DeniedBy != "limit:tokens" || r.TryAgainIn != time.Hour {
			t.Fatalf("denied by %q, try again in %v; want limit:tokens, 1h", r.DeniedBy, r.TryAgainIn)
		}
		wantCode(t, spend(40), "")
		wantCode(t, e.verify(t, key, LimitCost("requests", 1)), "")
		r = spend(0) // both full: the first in name order denies
		wantCode(t, r, CodeRateLimited)
		if r.DeniedBy != "limit:requests" {
			t.Fatalf("denied by %q, want limit:requests", r.DeniedBy)
		}
		got := e.get(t, k.ID)
		if remaining(t, got) != 97 || got.Limits["tokens"].Count != 100 || got.Limits["requests"].Count != 3 {
			t.Fatalf("stored: remaining %d, limits %+v; want 97, tokens 100, requests 3 (denials spend nothing)", remaining(t, got), got.Limits)
		}
		// Verifications that name no limit are not limited by them.
		wantCode(t, e.verify(t, key), "")
		// A name the key lacks limits nothing.
		wantCode(t, e.verify(t, key, LimitCost("images", 5)), "")
		// The windows open again.
		e.clock.Advance(time.Minute)
		wantCode(t, e.verify(t, key, LimitCost("requests", 3)), "")
		wantCode(t, e.verify(t, key, LimitCost("requests", 1)), CodeRateLimited)
		e.clock.Advance(time.Hour)
		wantCode(t, spend(100), "")

		// Update replaces the limits; one that stays keeps its counter.
		u, err := e.m.Update(ctx, k.ID, UpdateParams{Limits: map[string]NamedLimit{"tokens": {Max: 150, Window: time.Hour}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(u.Limits) != 1 || u.Limits["tokens"].Max != 150 || u.Limits["tokens"].Count != 100 {
			t.Fatalf("updated limits %+v, want tokens alone, max 150, count 100", u.Limits)
		}
		wantCode(t, e.verify(t, key, LimitCost("tokens", 50)), "")
		wantCode(t, e.verify(t, key, LimitCost("tokens", 1)), CodeRateLimited)
		wantCode(t, e.verify(t, key, LimitCost("requests", 100)), "") // gone: limits nothing
		if _, err := e.m.Update(ctx, k.ID, UpdateParams{Limits: map[string]NamedLimit{}}); err != nil {
			t.Fatal(err)
		}
		if got := e.get(t, k.ID); len(got.Limits) != 0 {
			t.Fatalf("limits after removing them all: %+v", got.Limits)
		}
		wantCode(t, e.verify(t, key, LimitCost("tokens", 1000)), "")
	})
}

// TestNamedLimitsRefuseBadInput: before any write.
func TestNamedLimitsRefuseBadInput(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		for _, c := range []struct {
			limits map[string]NamedLimit
			want   string
		}{
			{map[string]NamedLimit{"": {Max: 1, Window: time.Second}}, "must be 1 to 64 bytes"},
			{map[string]NamedLimit{"a b": {Max: 1, Window: time.Second}}, "only letters"},
			{map[string]NamedLimit{"x": {Max: -1, Window: time.Second}}, "negative"},
			{map[string]NamedLimit{"x": {Max: 1, Window: time.Microsecond}}, "whole number of milliseconds"},
		} {
			if _, _, err := e.m.Create(ctx, CreateParams{ReferenceID: "u", Limits: c.limits}); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Create(%v): err = %v, want ErrInvalid saying %q", c.limits, err, c.want)
			}
		}
		key, _ := e.create(t, CreateParams{RateLimit: noRateLimit()})
		for _, opts := range [][]VerifyOption{
			{LimitCost("x", -1)},
			{LimitCost("a/b", 1)},
			{LimitCost("x", 1), LimitCost("x", 2)},
		} {
			if _, err := e.m.Verify(ctx, key, opts...); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("Verify with bad LimitCost: err = %v, want ErrInvalid", err)
			}
		}
	})
}

// TestNamedLimitsUnderConcurrency: 100 callers each spend 7 tokens of a
// limit of 100 at once: exactly 14 are admitted, and the key's quota and
// the limit's counter agree.
func TestNamedLimitsUnderConcurrency(t *testing.T) {
	const callers, cost, max = 100, 7, 100
	inBothModes(t, func(t *testing.T, e *env) {
		if e.db != nil {
			// Every caller reads the limit before any writes: all decide
			// from one snapshot, so only the guarded writes keep the count.
			g := &gates{}
			e = newEnvOn(t, e.mem, limitReadGate{e.mem, g})
			g.p.Store(newReadGate(callers))
		}
		key, k := e.create(t, CreateParams{Remaining: quota(1000), RateLimit: noRateLimit(),
			Limits: map[string]NamedLimit{"tokens": {Max: max, Window: time.Hour}}})
		var admitted, limited atomic.Int64
		testrace.Release(callers, func(int) {
			r, err := e.m.Verify(context.Background(), key, LimitCost("tokens", cost))
			switch {
			case err != nil:
				t.Errorf("Verify: %v", err)
			case r.Valid:
				admitted.Add(1)
			case r.Code == CodeRateLimited && r.DeniedBy == "limit:tokens":
				limited.Add(1)
			default:
				t.Errorf("answer %s (denied by %q)", r.Code, r.DeniedBy)
			}
		})
		if admitted.Load() != max/cost || limited.Load() != callers-max/cost {
			t.Fatalf("%d admitted, %d limited; want %d and %d", admitted.Load(), limited.Load(), max/cost, callers-max/cost)
		}
		got := e.get(t, k.ID)
		if remaining(t, got) != 1000-max/cost || got.Limits["tokens"].Count != max/cost*cost {
			t.Fatalf("stored remaining %d, tokens %d; want %d and %d", remaining(t, got), got.Limits["tokens"].Count, 1000-max/cost, max/cost*cost)
		}
	})
}

// limitReadGate holds every read of named limits at a gate.
type limitReadGate struct {
	*memory.Memory
	g *gates
}

func (a limitReadGate) FindMany(ctx context.Context, t *driver.Table, where []driver.Where, o driver.FindOptions) ([]driver.Record, error) {
	recs, err := a.Memory.FindMany(ctx, t, where, o)
	if t.Model == core.ModelAPIKeyLimit {
		a.g.wait()
	}
	return recs, err
}

// TestNamedLimitsWithoutTheTable: a database without the apikeyLimit table
// verifies as before; creating a key with limits names the table.
func TestNamedLimitsWithoutTheTable(t *testing.T) {
	e := newEnv(t)
	e2 := newEnvOn(t, e.mem, schemaFailing{e.mem, core.ModelAPIKeyLimit})
	key, _ := e2.create(t, CreateParams{RateLimit: noRateLimit()})
	wantCode(t, e2.verify(t, key, LimitCost("tokens", 5)), "")
	if _, _, err := e2.m.Create(context.Background(), CreateParams{ReferenceID: "u", Limits: map[string]NamedLimit{"tokens": {Max: 1, Window: time.Second}}}); !errors.Is(err, core.ErrSchema) || !strings.Contains(err.Error(), "apikeyLimit") {
		t.Fatalf("Create with limits: err = %v, want ErrSchema naming apikeyLimit", err)
	}
}
