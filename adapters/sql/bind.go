package sluicesql

import (
	"time"

	"github.com/sluice-go/sluice/core"
)

// mysqlTimeLayout is how times are sent to MySQL: UTC wall-clock text, so
// that the driver's loc setting cannot shift what is stored.
const mysqlTimeLayout = "2006-01-02 15:04:05.000"

// bindValue turns a value core.DB normalised (int64, string, bool, UTC
// time.Time, nil) into what the dialect stores. Times are the one case that
// differs: SQLite has no time type and keeps core's fixed-width text, whose
// order is time order; MySQL gets UTC text; PostgreSQL gets the time.
func bindValue(d Dialect, v any) any {
	t, ok := v.(time.Time)
	if !ok {
		return v
	}
	switch d {
	case SQLite:
		return core.FormatTime(t)
	case MySQL:
		return t.UTC().Format(mysqlTimeLayout)
	}
	return t.UTC()
}
