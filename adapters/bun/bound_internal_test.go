package sluicebun

import (
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

func TestDollars(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT ?", "SELECT $1"},
		{`UPDATE "t" SET "c" = "c" + ? WHERE "k" = ? AND "c" < ?`, `UPDATE "t" SET "c" = "c" + $1 WHERE "k" = $2 AND "c" < $3`},
		{`SELECT "a?b", 'it''s ?', ? FROM "x""?"`, `SELECT "a?b", 'it''s ?', $1 FROM "x""?"`},
		{"SELECT 1", "SELECT 1"},
	} {
		if got := dollars(tc.in); got != tc.want {
			t.Errorf("dollars(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := dollars(tc.in); got != tc.want { // cached
			t.Errorf("cached dollars(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type nopHook struct{ bun.QueryHook }

func TestHasHooks(t *testing.T) {
	if !hooksFieldFound {
		t.Fatal("bun.DB has no queryHooks field: the bound path is never taken; update hasHooks")
	}
	db := bun.NewDB(nil, pgdialect.New())
	if hasHooks(db) {
		t.Error("a new bun.DB has hooks")
	}
	if !hasHooks(db.WithQueryHook(nopHook{})) {
		t.Error("WithQueryHook's clone has no hooks")
	}
	db.AddQueryHook(nopHook{})
	if !hasHooks(db) {
		t.Error("AddQueryHook did not count")
	}
}
