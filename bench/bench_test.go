package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestQuickRunOnSQLite runs the whole harness on SQLite with tiny cells and
// checks that the table has every row, each passing its correctness check,
// and that the report files are written.
func TestQuickRunOnSQLite(t *testing.T) {
	out := t.TempDir()
	cfg, err := parseFlags([]string{"-quick", "-db", "sqlite", "-duration", "30ms", "-goroutines", "1,4", "-keys", "50", "-out", out}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := run(context.Background(), cfg, newProgress(nil))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rep.results {
		seen[r.Approach+"|"+string(r.Scenario)+"|"+itoa(r.Goroutines)]++
		if !r.OK {
			t.Errorf("%s, %s, %d goroutines: %s", r.Approach, r.Scenario, r.Goroutines, r.Check)
		}
		if r.Decisions == 0 {
			t.Errorf("%s, %s, %d goroutines: no decision", r.Approach, r.Scenario, r.Goroutines)
		}
		if r.Scenario != denialStorm && r.Admitted != r.Decisions {
			t.Errorf("%s, %s: admitted %d of %d under a limit never reached", r.Approach, r.Scenario, r.Admitted, r.Decisions)
		}
	}
	names := approachNames("sqlite")
	// the five SQL references (floor, read-then-write, locking, Better
	// Auth's and the hand-written API-key verification); IncrementOne, rate
	// limiter and API-key verify on gorm, bun, ent and database/sql (pgx is
	// PostgreSQL only); the write-combining, GCRA and sliding-window
	// limiters on database/sql.
	if len(names) != 5+3*4+3 {
		t.Fatalf("approaches: %v", names)
	}
	// The cold keys run on the floor and the four plain rate limiters only.
	cold := func(n string) bool { return n == floorName || strings.HasSuffix(n, limiterSuffix) }
	rows := 0
	for _, n := range names {
		for _, sc := range scenarios {
			want := 1
			if sc == coldKeys && !cold(n) {
				want = 0
			}
			for _, g := range []int{1, 4} {
				rows += want
				if c := seen[n+"|"+string(sc)+"|"+itoa(g)]; c != want {
					t.Errorf("%s, %s, %d goroutines: %d rows, want %d", n, sc, g, c, want)
				}
			}
		}
	}
	if want := rows; len(rep.results) != want {
		t.Errorf("%d rows, want %d", len(rep.results), want)
	}
	if rep.failures() != 0 {
		t.Errorf("%d failures", rep.failures())
	}

	var text bytes.Buffer
	rep.writeText(&text)
	if !strings.Contains(text.String(), "the goals") || !strings.Contains(text.String(), "target ≤ 80") {
		t.Errorf("the text report has no goals:\n%s", text.String())
	}
	// A goal set at 1 and 32 goroutines is held at 1 and at the run's
	// largest count here.
	at := map[int]bool{}
	for _, q := range rep.ratios() {
		if q.What == "rate limiter ÷ SQL floor" && q.Scenario == hotKey {
			at[q.Goroutines] = true
		}
	}
	if !at[1] || !at[4] || len(at) != 2 {
		t.Errorf("rate limiter ÷ SQL floor, hot key, held at %v goroutines, want 1 and 4", at)
	}
	if err := rep.writeFiles(out); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(string(md), "\n| sqlite | "); rows != len(rep.results)+len(rep.ratios()) {
		t.Errorf("RESULTS.md has %d sqlite rows, want %d cells + %d ratios", rows, len(rep.results), len(rep.ratios()))
	}
	svg, err := os.ReadFile(filepath.Join(out, "chart.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("ent rate limiter")) {
		t.Errorf("chart.svg is not the chart: %.200s", svg)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestChecksCatchOverAdmission feeds the checks an approach that admits
// everything and stores nothing: both must fail it.
func TestChecksCatchOverAdmission(t *testing.T) {
	var stored atomic.Int64
	a := &approach{
		name: "broken",
		decider: func(scenario) decideFunc {
			return func(context.Context, int) (bool, error) { return true, nil }
		},
		stored: func(context.Context, scenario) (int64, int64, error) { return stored.Load(), 0, nil },
		burst: func(context.Context) (decideFunc, func(context.Context) (int64, error), error) {
			return func(context.Context, int) (bool, error) { return true, nil },
				func(context.Context) (int64, error) { return stored.Load(), nil }, nil
		},
	}
	if msg := burstCheck(context.Background(), a); !strings.Contains(msg, "over a limit") {
		t.Errorf("burst check: %q, want an over-admission", msg)
	}
	b := &backend{name: "fake", keys: 1, roundTrips: func() int64 { return 0 }}
	r := runCell(context.Background(), b, a, denialStorm, 2, 5*time.Millisecond)
	if r.OK || !strings.Contains(r.Check, "on a full key") || !strings.Contains(r.Check, "stored counts grew by 0") {
		t.Errorf("denial storm cell: ok %v, %q", r.OK, r.Check)
	}
}

// TestCountingDriver checks the round-trip count of each kind of call.
func TestCountingDriver(t *testing.T) {
	var n atomic.Int64
	db, err := openCounted("sqlite", "file:"+filepath.Join(t.TempDir(), "c.db")+sqliteOptions, &n)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	step := func(what string, want int64, fn func() error) {
		t.Helper()
		before := n.Load()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := n.Load() - before; got != want {
			t.Errorf("%s: %d round trips, want %d", what, got, want)
		}
	}
	ctx := context.Background()
	step("exec", 1, func() error { _, err := db.ExecContext(ctx, "CREATE TABLE t (a INTEGER)"); return err })
	step("query", 1, func() error {
		var c int
		return db.QueryRowContext(ctx, "SELECT count(*) FROM t WHERE a > ?", 0).Scan(&c)
	})
	step("transaction", 3, func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (?)", 1); err != nil {
			return err
		}
		return tx.Commit()
	})
	var stmt *sql.Stmt
	step("prepare", 1, func() error { stmt, err = db.PrepareContext(ctx, "INSERT INTO t VALUES (?)"); return err })
	step("statement", 1, func() error { _, err := stmt.ExecContext(ctx, 2); return err })
	stmt.Close()
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}} {
		got := h.quantile(c.q)
		if diff := float64(got-c.want) / float64(c.want); diff < -0.03 || diff > 0.03 {
			t.Errorf("q%.2f = %s, want %s ± 3%%", c.q, got, c.want)
		}
	}
}

// TestSpeedupPairsRounds checks that a ratio compares rounds with rounds:
// a slow round on both sides does not move it, where the ratio of the
// medians would.
func TestSpeedupPairsRounds(t *testing.T) {
	a := result{Decisions: 1, Elapsed: time.Second, PerRound: []float64{100, 400, 150}}
	b := result{Decisions: 1, Elapsed: time.Second, PerRound: []float64{50, 200, 300}}
	if got := speedup(a, b); got != 2 {
		t.Errorf("paired rounds: speedup %v, want 2 (the median of 2, 2 and 0.5)", got)
	}
	a.PerRound = append(a.PerRound, 80)
	b.PerRound = append(b.PerRound, 100)
	if got := speedup(a, b); got != 1.4 {
		t.Errorf("four rounds: speedup %v, want 1.4 (between 0.8 and 2)", got)
	}
	a.PerRound, b.PerRound = nil, nil
	a.Decisions, b.Decisions = 300, 100
	if got := speedup(a, b); got != 3 {
		t.Errorf("without rounds: speedup %v, want 3 (the medians' ratio)", got)
	}
}

// TestVerdictHoldsTheWorstValue checks that a goal is judged on its worst
// adapter: the least value for a floor, the greatest for a ceiling.
func TestVerdictHoldsTheWorstValue(t *testing.T) {
	vs := []namedValue{{"gorm", 0.9}, {"sql", 1.2}}
	cases := []struct {
		q    ratio
		want string
	}{
		{ratio{Values: vs, Target: 1, Binding: true}, "MISSED"},
		{ratio{Values: vs, Target: 0.9, Binding: true}, "met"},
		{ratio{Values: vs, Target: 1, Binding: false}, "(missed)"},
		{ratio{Values: vs, Target: 1.2, AtMost: true, Binding: true}, "met"},
		{ratio{Values: vs, Target: 1, AtMost: true, Binding: true}, "MISSED"},
		{ratio{Values: vs, Target: 1.5, AtMost: true, Binding: false}, "(met)"},
		{ratio{Values: vs}, "info"},
	}
	for _, c := range cases {
		if got := c.q.Verdict(); got != c.want {
			t.Errorf("target %v, at most %v, binding %v: %s, want %s", c.q.Target, c.q.AtMost, c.q.Binding, got, c.want)
		}
	}
}
