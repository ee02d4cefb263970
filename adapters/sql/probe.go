package sluicesql

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// probe asks the server what it is, once, at New. Each dialect's question
// fails on the other two, so a mismatch between the adapter's dialect and
// the database is refused here rather than at the first decision.
func (a *Adapter) probe(ctx context.Context) error {
	d := a.e.features.Dialect
	q := d.traits().versionQuery
	rec, err := retried(a, ctx, func() (driver.Record, error) { return a.queryOne(ctx, q, nil) })
	if err != nil {
		return a.openErr(q, err)
	}
	var version string
	for _, v := range rec {
		switch x := v.(type) {
		case string:
			version = x
		case []byte:
			version = string(x)
		}
	}
	f := &a.e.features
	f.Server = version
	f.UpdateReturning = d.traits().updateReturning
	switch d {
	case Postgres:
		f.InsertReturning = true
	case SQLite:
		if !atLeast(version, 3, 35) {
			return fmt.Errorf("%w: %s: SQLite %s has no RETURNING; sluice needs 3.35 or later", core.ErrUnsupported, a.e.name(), version)
		}
		f.InsertReturning = true
		a.probeSQLite(ctx)
	case MySQL:
		if strings.Contains(version, "PostgreSQL") {
			return fmt.Errorf("%s: the database is PostgreSQL (%s), not mysql (MySQL or MariaDB): %w", a.e.name(), version, core.ErrWrongDatabase)
		}
		f.MariaDB = strings.Contains(strings.ToLower(version), "mariadb")
		f.InsertReturning = f.MariaDB && atLeast(version, 10, 5)
		if err := a.checkMySQLTimes(ctx); err != nil {
			return err
		}
		a.probeMySQL(ctx)
		f.CausalReads = f.MariaDB && a.onGalera(ctx)
	}
	return nil
}

// openErr says why the probe at open failed, in the class of what
// happened: the database unreachable (core.ErrUnavailable), the
// credentials refused (core.ErrAuth), a server of another family
// (core.ErrWrongDatabase), a database busy past the retries
// (core.ErrContention); any other failure, such as a DSN the driver cannot
// parse, is the driver's error as it is.
func (a *Adapter) openErr(q string, err error) error {
	name, d := a.e.name(), a.e.features.Dialect
	switch {
	case errors.Is(err, core.ErrUnavailable):
		return fmt.Errorf("%s: cannot reach the %s database: %w", name, d, err)
	case errors.Is(err, core.ErrAuth):
		return fmt.Errorf("%s: the %s database refused the credentials: %w", name, d, err)
	case errors.Is(err, core.ErrWrongDatabase):
		return fmt.Errorf("%s: the database does not answer as %s (%s): %w", name, d, q, err)
	}
	return fmt.Errorf("%s: opening the %s database (%s): %w", name, d, q, err)
}

// checkMySQLTimes refuses a connection that reads DATETIME values in
// another zone than UTC. sluice stores times as UTC wall-clock DATETIME;
// go-sql-driver/mysql with parseTime=true and loc=Local (a common DSN)
// would read them as local times, shifted by the zone's offset, and a key
// valid for another second could answer "expired".
func (a *Adapter) checkMySQLTimes(ctx context.Context) error {
	const stored = "2001-02-03 04:05:06.007"
	want := time.Date(2001, 2, 3, 4, 5, 6, 7e6, time.UTC)
	rec, err := a.queryOne(ctx, "SELECT CAST('"+stored+"' AS DATETIME(3)) AS t", nil)
	if err != nil {
		return fmt.Errorf("%s: checking how the connection reads times: %w", a.e.name(), err)
	}
	got, err := driver.ParseTime(rec["t"])
	if err != nil {
		return fmt.Errorf("%s: checking how the connection reads times: %w", a.e.name(), err)
	}
	if !got.Equal(want) {
		return fmt.Errorf("%w: %s: the MySQL connection reads times in another zone than UTC "+
			"(DATETIME %s came back as %s): sluice stores times in UTC; use loc=UTC in the DSN "+
			"(go-sql-driver/mysql's default) or leave parseTime off", core.ErrUnsupported, a.e.name(), stored, rec["t"])
	}
	return nil
}

// atLeast reports whether a version text such as "10.11.19-MariaDB" or
// "3.45.1" is at least major.minor.
func atLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// onGalera reports whether the MariaDB server is a node of a Galera
// cluster: wsrep_on is ON. A server without the variable is not.
func (a *Adapter) onGalera(ctx context.Context) bool {
	n, err := a.scalar(ctx, "SELECT @@wsrep_on", nil)
	return err == nil && n == 1
}
