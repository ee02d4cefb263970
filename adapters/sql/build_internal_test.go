package sluicesql

import (
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

func TestDollars(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT ?", "SELECT $1"},
		{`UPDATE "t" SET "c" = "c" + ? WHERE "k" = ? AND "c" < ?`, `UPDATE "t" SET "c" = "c" + $1 WHERE "k" = $2 AND "c" < $3`},
		{`SELECT "a?b", 'it''s ?', ? FROM "x""?"`, `SELECT "a?b", 'it''s ?', $1 FROM "x""?"`},
		{"SELECT 1", "SELECT 1"},
	} {
		if got := Dollars(tc.in); got != tc.want {
			t.Errorf("Dollars(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := Dollars(tc.in); got != tc.want { // cached
			t.Errorf("cached Dollars(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// cols turns where clauses on fields into clauses on the columns of the
// same names, as the adapter receives them.
func cols(where ...core.Where) []driver.Where {
	out := make([]driver.Where, len(where))
	for i, w := range where {
		out[i] = driver.Where{Column: w.Field, Op: w.Op, Value: w.Value}
	}
	return out
}
