package sluicebun

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/uptrace/bun"
)

// hooksField locates bun.DB's list of query hooks, which bun does not
// export. If a bun release renames it, hasHooks answers true and every
// statement goes through bun, as it would without this shortcut.
var hooksField, hooksFieldFound = func() ([]int, bool) {
	f, ok := reflect.TypeFor[bun.DB]().FieldByName("queryHooks")
	if !ok || f.Type.Kind() != reflect.Slice {
		return nil, false
	}
	return f.Index, true
}()

// hasHooks reports whether db shows its statements to query hooks (added
// with AddQueryHook or WithQueryHook), read as bun itself reads them.
func hasHooks(db *bun.DB) bool {
	if !hooksFieldFound {
		return true
	}
	return reflect.ValueOf(db).Elem().FieldByIndex(hooksField).Len() > 0
}

// dollarCache maps the engine's statements, written with ? placeholders
// for bun, to PostgreSQL's $1, $2, …. The engine caches its statements by
// shape, so the set is small; the cap only guards against a caller who
// sends endless distinct text through the executor.
var (
	dollarCache sync.Map
	dollarCount atomic.Int64
)

const dollarCacheMax = 4096

// dollars rewrites each ? outside quoted identifiers and string literals
// as $n.
func dollars(query string) string {
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
