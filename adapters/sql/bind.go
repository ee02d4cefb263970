package sluicesql

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// mysqlTimeLayout is how times are sent to MySQL: UTC wall-clock text, so
// that the driver's loc setting cannot shift what is stored.
const mysqlTimeLayout = "2006-01-02 15:04:05.000"

// bindValue turns a value core.DB normalised (int64, string, bool, UTC
// time.Time, nil) into what the dialect stores. Times are the one case that
// differs (traits.timeValue).
func bindValue(d Dialect, v any) any {
	t, ok := v.(time.Time)
	if !ok {
		return v
	}
	return d.traits().timeValue(t)
}

// dollarCache maps statements written with ? placeholders to PostgreSQL's
// $1, $2, …. The engine caches its statements by shape, so the set is
// small; the cap only guards against a caller who sends endless distinct
// text through an executor.
var (
	dollarCache sync.Map
	dollarCount atomic.Int64
)

const dollarCacheMax = 4096

// Dollars rewrites each ? outside quoted identifiers and string literals
// as $n, numbered from 1: the engine's statements in the [Question] style
// turned into PostgreSQL's own, for an executor that runs them past an ORM
// which would otherwise rewrite them (see the gorm and bun adapters). The
// results are cached, so a statement the engine repeats is rewritten once.
func Dollars(query string) string {
	if v, ok := dollarCache.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0 // a doubled quote closes and reopens: same result
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	out := b.String()
	if dollarCount.Add(1) <= dollarCacheMax {
		dollarCache.Store(query, out)
	}
	return out
}
