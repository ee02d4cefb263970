package sluiceent

import (
	"errors"
	"fmt"
	"testing"

	"entgo.io/ent/dialect"

	"github.com/sluice-go/sluice/core"
)

// stateErr has SQLState, as pgx's *pgconn.PgError and lib/pq's *pq.Error do.
type stateErr string

func (e stateErr) Error() string    { return "pg error " + string(e) }
func (e stateErr) SQLState() string { return string(e) }

// codeErr has Code, as modernc.org/sqlite's *Error does.
type codeErr int

func (e codeErr) Error() string { return fmt.Sprintf("sqlite error (%d)", int(e)) }
func (e codeErr) Code() int     { return int(e) }

// TestMapErr checks how each driver's errors are classified, without a
// server: the texts and codes are those the drivers produce.
func TestMapErr(t *testing.T) {
	cases := []struct {
		dialect string
		err     error
		want    error // nil: passed through unchanged
	}{
		{dialect.Postgres, fmt.Errorf("insert: %w", stateErr("23505")), core.ErrConflict},
		{dialect.Postgres, stateErr("40P01"), core.ErrContention},
		{dialect.Postgres, stateErr("40001"), core.ErrContention},
		{dialect.Postgres, stateErr("23502"), nil}, // not_null_violation
		{dialect.MySQL, errors.New("Error 1062 (23000): Duplicate entry 'a' for key 'slot'"), core.ErrConflict},
		{dialect.MySQL, errors.New("Error 1213 (40001): Deadlock found when trying to get lock"), core.ErrContention},
		{dialect.MySQL, errors.New("Error 1048 (23000): Column 'name' cannot be null"), nil},
		{dialect.SQLite, codeErr(2067), core.ErrConflict},
		{dialect.SQLite, codeErr(1555), core.ErrConflict},
		{dialect.SQLite, errors.New("constraint failed: UNIQUE constraint failed: counter.slot"), core.ErrConflict},
		{dialect.SQLite, codeErr(5), core.ErrContention},
		{dialect.SQLite, codeErr(517), core.ErrContention}, // SQLITE_BUSY_SNAPSHOT
		{dialect.SQLite, codeErr(1299), nil},               // SQLITE_CONSTRAINT_NOTNULL
	}
	for _, c := range cases {
		a := &Adapter{dialect: c.dialect}
		got := a.mapErr(c.err)
		if !errors.Is(got, c.err) {
			t.Errorf("%s %v: the cause is lost: %v", c.dialect, c.err, got)
		}
		for _, kind := range []error{core.ErrConflict, core.ErrContention} {
			if is := errors.Is(got, kind); is != (kind == c.want) {
				t.Errorf("%s %v: errors.Is(%v) = %v", c.dialect, c.err, kind, is)
			}
		}
	}
	if (&Adapter{dialect: dialect.Postgres}).mapErr(nil) != nil {
		t.Error("mapErr(nil) != nil")
	}
}
