package sluicebun

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/sluice-go/sluice/core"
)

// mapErr wraps a unique-key violation of any of the three drivers with
// core.ErrConflict and returns other errors as they are.
func mapErr(err error) error {
	if err != nil && isUniqueViolation(err) {
		return fmt.Errorf("%w: %w", core.ErrConflict, err)
	}
	return err
}

// isUniqueViolation recognises PostgreSQL's 23505 (pgx's PgError, or any
// error with a SQLState method), MySQL's 1062 and 1586, and SQLite's
// SQLITE_CONSTRAINT_UNIQUE and _PRIMARYKEY (modernc's Error has a Code
// method; other SQLite drivers are recognised by their message).
func isUniqueViolation(err error) bool {
	var state interface{ SQLState() string }
	if errors.As(err, &state) && state.SQLState() == "23505" {
		return true
	}
	var my *mysql.MySQLError
	if errors.As(err, &my) {
		return my.Number == 1062 || my.Number == 1586
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() {
		case 2067, 1555: // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
			return true
		}
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// isDeadlock recognises a transaction that the database rolled back to
// break a deadlock: MySQL's 1213 and PostgreSQL's 40P01.
func isDeadlock(err error) bool {
	var my *mysql.MySQLError
	if errors.As(err, &my) {
		return my.Number == 1213
	}
	var state interface{ SQLState() string }
	return errors.As(err, &state) && state.SQLState() == "40P01"
}
