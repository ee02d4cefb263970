package sluicegorm

import (
	"errors"
	"fmt"
	"strings"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/sluice-go/sluice/core"
	"gorm.io/gorm"
)

// mapErr marks unique-key violations with core.ErrConflict, whichever
// driver raised them, and passes every other error through.
func (a *Adapter) mapErr(err error) error {
	if err == nil || !isUniqueViolation(err) {
		return err
	}
	return fmt.Errorf("%w: %w", core.ErrConflict, err)
}

// isUniqueViolation recognises PostgreSQL's 23505 (pgx and lib/pq expose
// SQLState), MySQL's 1062, SQLite's SQLITE_CONSTRAINT_UNIQUE (2067) and
// SQLITE_CONSTRAINT_PRIMARYKEY (1555), and gorm's translated
// ErrDuplicatedKey (with gorm.Config.TranslateError).
func isUniqueViolation(err error) bool {
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return true
	}
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		return state.SQLState() == "23505"
	}
	var my *mysqldriver.MySQLError
	if errors.As(err, &my) {
		return my.Number == 1062
	}
	var code interface{ Code() int } // modernc.org/sqlite's *Error
	if errors.As(err, &code) && (code.Code() == 2067 || code.Code() == 1555) {
		return true
	}
	// mattn/go-sqlite3 and others only say it in the message.
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "PRIMARY KEY constraint failed")
}
