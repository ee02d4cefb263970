package core

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/sluice-go/sluice/core/driver"
)

// Preset chooses how logical names become table and column names.
type Preset uint8

const (
	// SnakeCase, the default: tables rate_limit and apikey, columns such
	// as last_request.
	SnakeCase Preset = iota
	// BetterAuth reproduces Better Auth's names: tables rateLimit and apikey,
	// camelCase columns such as lastRequest, so a Go service can share tables
	// with a Better Auth deployment that uses numeric ids.
	BetterAuth
)

// Naming configures physical names. The zero value means snake_case,
// singular tables, no overrides.
type Naming struct {
	Preset Preset
	// Plural appends "s" to every table name that is not overridden.
	Plural bool
	// Tables overrides table names: logical model name → table name. An
	// override must be a valid identifier; "" is refused.
	Tables map[string]string
	// Columns overrides column names: logical model → logical field → column.
	Columns map[string]map[string]string
}

// Schema is a set of models resolved to physical names by a [Naming].
type Schema struct {
	tables []*driver.Table
	byName map[string]*driver.Table
}

// identifier is what every table and column name must look like: portable
// across PostgreSQL, MySQL and SQLite without surprises (63 is PostgreSQL's limit).
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// NewSchema resolves the built-in models, plus any extra models, with naming.
// It fails with [ErrInvalid] on an override naming an unknown model or field,
// a name that is not a valid identifier, or two tables or two columns of one
// table sharing a name (compared case-insensitively, as MySQL does).
func NewSchema(naming Naming, extra ...Model) (*Schema, error) {
	models := append(BuiltinModels(), extra...)
	s := &Schema{byName: map[string]*driver.Table{}}
	tableNames := map[string]string{}
	for _, m := range models {
		if err := checkModel(m); err != nil {
			return nil, err
		}
		if _, dup := s.byName[m.Name]; dup {
			return nil, invalid("NewSchema", m.Name, "model defined twice")
		}
		t, err := resolve(m, naming)
		if err != nil {
			return nil, err
		}
		low := strings.ToLower(t.Name)
		if other, dup := tableNames[low]; dup {
			return nil, invalid("NewSchema", m.Name, "table name %q is already used by model %q", t.Name, other)
		}
		tableNames[low] = m.Name
		s.tables = append(s.tables, t)
		s.byName[m.Name] = t
	}
	for model, fields := range naming.Columns {
		t, ok := s.byName[model]
		if !ok {
			return nil, invalid("NewSchema", model, "column override for unknown model")
		}
		for field := range fields {
			if _, ok := t.Column(field); !ok {
				return nil, invalid("NewSchema", model, "column override for unknown field %q", field)
			}
		}
	}
	for model := range naming.Tables {
		if _, ok := s.byName[model]; !ok {
			return nil, invalid("NewSchema", model, "table override for unknown model")
		}
	}
	return s, nil
}

// MustSchema is NewSchema that panics on error, for tests and package-level variables.
func MustSchema(naming Naming, extra ...Model) *Schema {
	s, err := NewSchema(naming, extra...)
	if err != nil {
		panic(err)
	}
	return s
}

func checkModel(m Model) error {
	if m.Name == "" {
		return invalid("NewSchema", "", "model without a name")
	}
	if len(m.Fields) == 0 || !m.Fields[0].Primary || m.Fields[0].Type != driver.TypeInt {
		return invalid("NewSchema", m.Name, "the first field must be the integer primary key")
	}
	for i, f := range m.Fields {
		if f.Name == "" || f.Type < driver.TypeString || f.Type > driver.TypeTime {
			return invalid("NewSchema", m.Name, "field %d has no name or an unknown type", i)
		}
		if i > 0 && f.Primary {
			return invalid("NewSchema", m.Name, "field %q: only the first field may be the primary key", f.Name)
		}
		if f.Default != nil {
			if v, err := toStorage(f, f.Default); err != nil || v == nil {
				return invalid("NewSchema", m.Name, "field %q: the default %#v does not fit a %s field", f.Name, f.Default, f.Type)
			}
		}
	}
	return nil
}

func resolve(m Model, n Naming) (*driver.Table, error) {
	t := driver.Table{Model: m.Name, Comment: m.Comment, Optional: m.Optional}
	// An override set to "" is refused below rather than ignored: it is
	// more likely a mistake than a request for the default.
	name, overridden := n.Tables[m.Name]
	t.Name = name
	if !overridden {
		t.Name = m.Name
		if n.Preset == SnakeCase {
			t.Name = snake(m.Name)
		}
		if n.Plural {
			t.Name += "s"
		}
	}
	if !identifier.MatchString(t.Name) {
		return nil, invalid("NewSchema", m.Name, "table name %q is not a valid identifier", t.Name)
	}
	lower := map[string]string{}
	for _, f := range m.Fields {
		name, overridden := n.Columns[m.Name][f.Name]
		if !overridden {
			name = f.Name
			if n.Preset == SnakeCase {
				name = snake(f.Name)
			}
		}
		if !identifier.MatchString(name) {
			return nil, invalid("NewSchema", m.Name, "column name %q for field %q is not a valid identifier", name, f.Name)
		}
		if other, dup := lower[strings.ToLower(name)]; dup {
			return nil, invalid("NewSchema", m.Name, "fields %q and %q both map to column %q", other, f.Name, name)
		}
		lower[strings.ToLower(name)] = f.Name
		t.Columns = append(t.Columns, driver.Column{Name: name, Field: f})
	}
	return driver.NewTable(t), nil
}

// snake turns lastRequest into last_request and rateLimitTimeWindow into
// rate_limit_time_window; runs of capitals stay together (userID → user_id).
func snake(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		if unicode.IsUpper(c) {
			prevLower := i > 0 && (unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1]))
			nextLower := i > 0 && i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1])
			if prevLower || nextLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(c))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Table returns the resolved table of a logical model.
func (s *Schema) Table(model string) (*driver.Table, bool) {
	t, ok := s.byName[model]
	return t, ok
}

// Tables returns every table, built-in models first, in definition order.
func (s *Schema) Tables() []*driver.Table { return append([]*driver.Table(nil), s.tables...) }

// Without returns a copy of s without the named models, for a database
// that holds only some of the tables (none of the optional ones, say): a DB
// on it refuses those models as unknown, and the API-key manager treats
// the features that need them as unavailable. A name s lacks is ignored.
func (s *Schema) Without(models ...string) *Schema {
	out := &Schema{byName: map[string]*driver.Table{}}
	for _, t := range s.tables {
		if !slices.Contains(models, t.Model) {
			out.tables = append(out.tables, t)
			out.byName[t.Model] = t
		}
	}
	return out
}

// Models returns the logical model names, sorted.
func (s *Schema) Models() []string {
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// String describes the schema, for debugging.
func (s *Schema) String() string {
	var b strings.Builder
	for _, t := range s.tables {
		fmt.Fprintf(&b, "%s(%s)\n", t.Name, strings.Join(t.ColumnNames(), ", "))
	}
	return b.String()
}
