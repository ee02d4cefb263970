package sluicebun

import (
	"reflect"

	"github.com/uptrace/bun"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
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

// dollars rewrites each ? outside quoted identifiers and string literals
// as $n: bun's placeholders for PostgreSQL's (see [sluicesql.Dollars]).
func dollars(query string) string { return sluicesql.Dollars(query) }
