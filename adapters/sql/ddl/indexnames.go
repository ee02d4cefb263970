package ddl

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/sluice-go/sluice/core/driver"
)

// MaxIdentifier is PostgreSQL's limit on a name (NAMEDATALEN-1 bytes); a
// longer one is cut silently, and MySQL refuses more than 64 characters.
const MaxIdentifier = 63

// IndexKey is one single-column index: a table and its column.
type IndexKey struct{ Table, Column string }

// IndexNames are the names of a schema's indexes (see [Indexes]).
type IndexNames map[IndexKey]string

// Indexes names the index of every indexed column of s, so that every
// target (DDL, diff, gorm, bun, ent) uses the same names.
//
// An index is called <table>_<column>_key (unique) or _idx (plain). That
// natural name is kept when it fits in 63 characters, no other index of
// the schema has it and no table is called so; otherwise the index is
// called by the natural name cut short plus "_" and 8 hex digits of a
// SHA-256 of its table and column. The rules matter because PostgreSQL
// cuts a longer name itself and, like SQLite, keeps indexes and tables in
// one namespace per schema: two indexes, or an index and a table, with
// one name make CREATE INDEX IF NOT EXISTS skip the second silently, and a
// lost unique index lets the limiter over-admit.
//
// Names are compared case-insensitively, as MySQL and SQLite compare them,
// and depend on the whole schema, never on which models are generated.
// Relations PostgreSQL names itself (<table>_pkey, <table>_<column>_seq)
// cannot be taken: theirs end in "pkey" or "seq" (perhaps plus digits),
// ours in "_key", "_idx" or hex digits.
func Indexes(tables []*driver.Table) IndexNames {
	type entry struct {
		key             IndexKey
		natural, suffix string
	}
	var entries []entry
	count := map[string]int{}
	taken := map[string]bool{} // lower-cased names an index may not take
	for _, t := range tables {
		taken[strings.ToLower(t.Name)] = true
		for _, c := range t.Columns {
			suffix, ok := indexSuffix(c)
			if !ok {
				continue
			}
			e := entry{IndexKey{t.Name, c.Name}, t.Name + "_" + c.Name + "_" + suffix, suffix}
			entries = append(entries, e)
			count[strings.ToLower(e.natural)]++
		}
	}
	names := make(IndexNames, len(entries))
	var hashed []entry
	for _, e := range entries {
		low := strings.ToLower(e.natural)
		if len(e.natural) <= MaxIdentifier && count[low] == 1 && !taken[low] {
			names[e.key] = e.natural
			continue
		}
		hashed = append(hashed, e)
	}
	for _, name := range names {
		taken[strings.ToLower(name)] = true
	}
	for _, e := range hashed {
		// Table and column joined by a character no identifier holds: two
		// indexes with one natural name still hash apart.
		sum := sha256.Sum256([]byte(e.key.Table + "." + e.key.Column + "." + e.suffix))
		h := hex.EncodeToString(sum[:4])
		// Every tail is "_" then characters other than "_", and no two
		// tails are equal, so no two candidates are: the loop ends once it
		// has passed the finitely many names taken.
		for n := 0; ; n++ {
			tail := "_" + h
			if n > 0 {
				tail += strconv.Itoa(n)
			}
			name := e.natural[:min(len(e.natural), MaxIdentifier-len(tail))] + tail
			if low := strings.ToLower(name); !taken[low] {
				taken[low] = true
				names[e.key] = name
				break
			}
		}
	}
	return names
}

// HasIndex reports whether a column has an index of its own.
func HasIndex(c driver.Column) bool { _, ok := indexSuffix(c); return ok }

// indexSuffix is the suffix of a column's index name, if it has one of its own.
func indexSuffix(c driver.Column) (string, bool) {
	switch {
	case c.Field.Unique:
		return "key", true
	case c.Field.Index:
		return "idx", true
	}
	return "", false
}

// Of returns the index name and whether it is unique for a column of t
// that has an index of its own.
func (names IndexNames) Of(t *driver.Table, c driver.Column) (name string, unique, ok bool) {
	if !HasIndex(c) {
		return "", false, false
	}
	return names[IndexKey{t.Name, c.Name}], c.Field.Unique, true
}
