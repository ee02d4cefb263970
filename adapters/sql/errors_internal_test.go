package sluicesql

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/sluice-go/sluice/core"
)

type pgErr struct{ code string }

func (e pgErr) Error() string    { return "pg error " + e.code }
func (e pgErr) SQLState() string { return e.code }

type sqliteErr struct {
	code int
	msg  string
}

func (e sqliteErr) Error() string { return e.msg }
func (e sqliteErr) Code() int     { return e.code }

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// Each driver's error reaches the class the contract gives it, the same
// way whatever ORM wrapped it.
func TestErrorClasses(t *testing.T) {
	mysqlErr := func(n int, state string) error {
		return fmt.Errorf("orm: %w", errors.New(fmt.Sprintf("Error %d (%s): something", n, state)))
	}
	for _, tc := range []struct {
		d    Dialect
		err  error
		want error // nil: passed through without a sentinel
	}{
		{Postgres, pgErr{"23505"}, core.ErrConflict},
		{Postgres, fmt.Errorf("wrapped: %w", pgErr{"40001"}), core.ErrContention},
		{Postgres, pgErr{"40P01"}, core.ErrContention},
		{Postgres, pgErr{"55P03"}, core.ErrContention},
		{Postgres, pgErr{"22021"}, core.ErrInvalid},
		{Postgres, pgErr{"22003"}, core.ErrInvalid},
		{Postgres, pgErr{"42P01"}, nil},
		{MySQL, mysqlErr(1062, "23000"), core.ErrConflict},
		{MySQL, mysqlErr(1586, "23000"), core.ErrConflict},
		{MySQL, mysqlErr(1213, "40001"), core.ErrContention},
		{MySQL, mysqlErr(1205, "HY000"), core.ErrContention},
		{MySQL, mysqlErr(1366, "HY000"), core.ErrInvalid},
		{MySQL, mysqlErr(1690, "22003"), core.ErrInvalid},
		{MySQL, errors.New("Error 1062: Duplicate entry"), core.ErrConflict},
		{MySQL, mysqlErr(1146, "42S02"), nil},
		{SQLite, sqliteErr{2067, "UNIQUE constraint failed: t.key"}, core.ErrConflict},
		{SQLite, sqliteErr{1555, "PRIMARY KEY constraint failed"}, core.ErrConflict},
		{SQLite, sqliteErr{5, "database is locked"}, core.ErrContention},
		{SQLite, sqliteErr{517, "database is locked (snapshot)"}, core.ErrContention},
		{SQLite, sqliteErr{1, "integer overflow"}, core.ErrInvalid},
		{SQLite, errors.New("UNIQUE constraint failed: t.key"), core.ErrConflict}, // a driver without Code
		{SQLite, sqliteErr{1, "no such table: t"}, nil},
		{Postgres, context.Canceled, nil},
		// Unreachable, refused credentials, another family.
		{MySQL, mysqlErr(1047, "08S01"), core.ErrUnavailable}, // Galera: WSREP has not yet prepared node for application use
		{MySQL, mysqlErr(1180, "HY000"), core.ErrUnavailable}, // Galera: not connected to Primary Component, during COMMIT
		{MySQL, mysqlErr(1040, "08004"), core.ErrUnavailable}, // too many connections
		{MySQL, errors.New("invalid connection"), core.ErrUnavailable},
		{MySQL, mysqlErr(1045, "28000"), core.ErrAuth},
		{MySQL, mysqlErr(1305, "42000"), nil}, // its own family: a missing function is no class
		{Postgres, mysqlErr(1305, "42000"), core.ErrWrongDatabase},
		{Postgres, pgErr{"57P03"}, core.ErrUnavailable},
		{Postgres, pgErr{"53300"}, core.ErrUnavailable},
		{Postgres, pgErr{"28P01"}, core.ErrAuth},
		{Postgres, pgErr{"28000"}, core.ErrAuth},
		{SQLite, pgErr{"42883"}, core.ErrWrongDatabase},
		{Postgres, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, core.ErrUnavailable},
		{Postgres, fmt.Errorf("failed to connect: %w", timeoutErr{}), core.ErrUnavailable},
		{SQLite, sqliteErr{14, "unable to open database file"}, core.ErrUnavailable},
		{SQLite, sqliteErr{26, "file is not a database"}, core.ErrWrongDatabase},
		{MySQL, sqliteErr{1, "no such function: VERSION"}, core.ErrWrongDatabase},
		{Postgres, errors.New("cannot parse `garbage`: failed to parse as keyword/value"), nil},
	} {
		e := &engine{features: Features{Dialect: tc.d}}
		got := e.mapErr(tc.err)
		if !errors.Is(got, tc.err) {
			t.Errorf("%s %v: the driver error is lost: %v", tc.d, tc.err, got)
		}
		for _, s := range []error{core.ErrConflict, core.ErrContention, core.ErrInvalid, core.ErrUnavailable, core.ErrAuth, core.ErrWrongDatabase} {
			if errors.Is(got, s) != (s == tc.want) {
				t.Errorf("%s %v: errors.Is(%v) = %v, want class %v", tc.d, tc.err, s, errors.Is(got, s), tc.want)
			}
		}
	}
}

// An executor's own Codes is asked first.
func TestCustomCodes(t *testing.T) {
	sentinel := errors.New("driver-specific duplicate")
	e := &engine{features: Features{Dialect: MySQL}, opts: Options{Codes: func(err error) (string, bool) {
		if errors.Is(err, sentinel) {
			return "1062", true
		}
		return "", false
	}}}
	if got := e.mapErr(sentinel); !errors.Is(got, core.ErrConflict) {
		t.Errorf("custom code: %v", got)
	}
}
