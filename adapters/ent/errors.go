package sluiceent

import (
	"errors"
	"fmt"
	"strings"

	"entgo.io/ent/dialect"

	"github.com/sluice-go/sluice/core"
)

// mapErr wraps a unique-key violation with core.ErrConflict, and a write
// the database aborted because of concurrent writers (a deadlock victim, a
// serialization failure, SQLite still busy after its timeout) with
// core.ErrContention, which callers such as the rate limiter retry. The
// adapter imports no database driver (a second driver registering "sqlite"
// panics at start-up), so it recognises each driver's error by its methods
// or text.
func (a *Adapter) mapErr(err error) error {
	if err == nil || errors.Is(err, core.ErrConflict) || errors.Is(err, core.ErrContention) {
		return err
	}
	if a.isUnique(err) {
		return fmt.Errorf("%w: %w", core.ErrConflict, err)
	}
	if a.isContention(err) {
		return fmt.Errorf("%w: %w", core.ErrContention, err)
	}
	return err
}

func (a *Adapter) isContention(err error) bool {
	switch a.dialect {
	case dialect.Postgres:
		var st interface{ SQLState() string }
		if errors.As(err, &st) {
			switch st.SQLState() {
			case "40001", "40P01": // serialization_failure, deadlock_detected
				return true
			}
		}
	case dialect.MySQL:
		return isDeadlock(err)
	case dialect.SQLite:
		var coded interface{ Code() int }
		if errors.As(err, &coded) {
			switch coded.Code() & 0xff { // primary result code
			case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
				return true
			}
		}
	}
	return false
}

func (a *Adapter) isUnique(err error) bool {
	switch a.dialect {
	case dialect.Postgres:
		// pgx's *pgconn.PgError and lib/pq's *pq.Error both have SQLState.
		var st interface{ SQLState() string }
		return errors.As(err, &st) && st.SQLState() == "23505" // unique_violation
	case dialect.MySQL:
		// go-sql-driver/mysql formats *MySQLError as "Error 1062 (23000): Duplicate entry …".
		msg := err.Error()
		for _, code := range []string{"1062", "1586"} { // ER_DUP_ENTRY, ER_DUP_ENTRY_WITH_KEY_NAME
			if strings.Contains(msg, "Error "+code+" (") || strings.Contains(msg, "Error "+code+":") {
				return true
			}
		}
		return false
	case dialect.SQLite:
		// modernc.org/sqlite's *Error has Code: the extended result code.
		var coded interface{ Code() int }
		if errors.As(err, &coded) {
			switch coded.Code() {
			case 2067, 1555: // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
				return true
			}
		}
		msg := err.Error()
		return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "PRIMARY KEY constraint failed")
	}
	return false
}

// isDeadlock reports MySQL's deadlock error (1213), after which InnoDB has
// already rolled the transaction back and the whole transaction can be retried.
func isDeadlock(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "Error 1213 (") || strings.Contains(msg, "Error 1213:")
}
