package sluicesql

import (
	"context"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Literal inlining on MySQL.
//
// go-sql-driver/mysql, unless its DSN sets interpolateParams=true, answers
// a statement with arguments with driver.ErrSkip, and database/sql then
// prepares it, executes it and closes it: two round trips for every
// statement. When the engine finds at New that its executor does that, it
// writes the values into the statement text itself and sends it with no
// arguments, in one round trip, as the driver's interpolateParams or bun
// would. An executor that binds without preparing (interpolateParams, bun)
// or that keeps its prepared statements (gorm's PrepareStmt) keeps its
// arguments: inlining would gain nothing there, or defeat its cache.
//
// Literals are byte-exact and need no escaping: a string is a hexadecimal
// literal with a utf8mb4 introducer (_utf8mb4 X'…'), which no sql_mode
// (NO_BACKSLASH_ESCAPES, ANSI_QUOTES) reads differently, and which takes
// the column's collation in a comparison or an assignment as a bound
// string does; a []byte is a binary string (X'…'); an integer is its
// decimal form; a bool is TRUE or FALSE; a nil is NULL. A string that is not valid UTF-8 is refused with
// core.ErrInvalid before any I/O, as the server would refuse it.

// What the probe at New found about a MySQL executor (engine.mysql).
const (
	mysqlInline int32 = 1 << iota // it prepares every statement with arguments anew: inline the values
	mysqlLastID                   // its Exec results carry the OK packet's last insert id
)

// inlines reports whether the engine writes values into the statement
// text on this adapter's executor.
func (a *Adapter) inlines() bool {
	return !a.e.dollar && a.e.mysql.Load()&mysqlInline != 0 // set by probeMySQL alone
}

// inlined returns q with args written into it when the engine inlines,
// and q and args unchanged otherwise (or when a value has no literal
// form). It fails only for a string that is not valid UTF-8.
func (a *Adapter) inlined(q string, args []any) (string, []any, error) {
	if len(args) == 0 || !a.inlines() {
		return q, args, nil
	}
	out, ok, err := inlineMySQL(q, args)
	if err != nil || !ok {
		return q, args, err
	}
	return out, nil, nil
}

// inlineMySQL replaces each ? outside quoted identifiers and literals with
// the literal of the next argument. ok is false, and the statement should
// run with its arguments, when the placeholders and the arguments do not
// pair up or a value has no literal form.
func inlineMySQL(q string, args []any) (string, bool, error) {
	size := len(q)
	for _, v := range args {
		if s, ok := v.(string); ok {
			size += 12 + 2*len(s)
		} else if b, ok := v.([]byte); ok {
			size += 3 + 2*len(b)
		} else {
			size += 20
		}
	}
	buf := make([]byte, 0, size)
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0 // a doubled quote closes and reopens: same result
			}
		case c == '`' || c == '\'' || c == '"':
			quote = c
		case c == '?':
			if n == len(args) {
				return "", false, nil
			}
			var ok bool
			var err error
			buf, ok, err = appendMySQLLiteral(buf, args[n])
			if err != nil || !ok {
				return "", false, err
			}
			n++
			continue
		}
		buf = append(buf, c)
	}
	if n != len(args) {
		return "", false, nil
	}
	return string(buf), true, nil
}

const hexDigits = "0123456789ABCDEF"

// appendMySQLLiteral appends v's literal. ok is false for a type the
// engine does not bind (core.DB never sends one).
func appendMySQLLiteral(buf []byte, v any) ([]byte, bool, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, "NULL"...), true, nil
	case int64:
		return strconv.AppendInt(buf, x, 10), true, nil
	case int:
		return strconv.AppendInt(buf, int64(x), 10), true, nil
	case uint64:
		return strconv.AppendUint(buf, x, 10), true, nil
	case []byte: // a binary string (incrementOptimistic's guard)
		buf = append(buf, "X'"...)
		for _, c := range x {
			buf = append(buf, hexDigits[c>>4], hexDigits[c&15])
		}
		return append(buf, '\''), true, nil
	case bool:
		if x {
			return append(buf, "TRUE"...), true, nil
		}
		return append(buf, "FALSE"...), true, nil
	case string:
		if !utf8.ValidString(x) {
			return buf, false, fmt.Errorf("%w: a string is not valid UTF-8", core.ErrInvalid)
		}
		buf = append(buf, "_utf8mb4 X'"...)
		for i := 0; i < len(x); i++ {
			buf = append(buf, hexDigits[x[i]>>4], hexDigits[x[i]&15])
		}
		return append(buf, '\''), true, nil
	case time.Time: // bindValue has made times text already; kept for safety
		return appendMySQLLiteral(buf, x.UTC().Format(mysqlTimeLayout))
	}
	return buf, false, nil
}

// probeMySQL finds out, once at New on MySQL, what the executor does.
//
// Whether it prepares every statement with arguments anew: on one
// connection (a transaction the engine begins, or the caller's), it runs
// the same statement with an argument twice and reads the session's count
// of prepared statements (Com_stmt_prepare) around them. Two more means
// prepare-and-close each time, and inlining then saves a round trip per
// statement. Anything else, or any error, leaves the arguments to the
// executor, as before.
//
// Whether its Exec results carry the last insert id (gorm's do when its
// raw callback keeps the driver's result), which IncrementValue reads.
func (a *Adapter) probeMySQL(ctx context.Context) {
	var caps int32
	defer func() { a.e.mysql.Store(caps) }()
	probe := func(x *Adapter) error {
		if res, err := x.x.Exec(ctx, "DO 1"); err == nil {
			if _, err := res.LastInsertId(); err == nil {
				caps |= mysqlLastID
			}
		}
		if a.e.dollar {
			return nil
		}
		before, err := x.preparedCount(ctx)
		if err != nil {
			return err
		}
		for range 2 {
			if _, err := x.queryOne(ctx, "SELECT ? AS sluice_probe", []any{int64(1)}); err != nil {
				return err
			}
		}
		after, err := x.preparedCount(ctx)
		if err != nil {
			return err
		}
		if after-before >= 2 {
			caps |= mysqlInline
		}
		return nil
	}
	if err := a.inTransaction(ctx, probe); err != nil {
		caps &^= mysqlInline
	}
}

// preparedCount reads the session's Com_stmt_prepare.
func (a *Adapter) preparedCount(ctx context.Context) (int64, error) {
	rec, err := a.queryOne(ctx, "SHOW SESSION STATUS LIKE 'Com_stmt_prepare'", nil)
	if err != nil {
		return 0, err
	}
	for k, v := range rec {
		if k != "Variable_name" {
			return driver.ParseInt(v)
		}
	}
	return 0, fmt.Errorf("%s: no Com_stmt_prepare", a.e.name())
}
