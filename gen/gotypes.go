package gen

import (
	"fmt"
	"strings"

	"github.com/sluice-go/sluice/adapters/sql/ddl"
	"github.com/sluice-go/sluice/core/driver"
)

// goType is the Go type of a field in a model struct: int64, string, bool
// or time.Time, behind a pointer when the column accepts NULL.
func goType(f driver.Field) string {
	var t string
	switch f.Type {
	case driver.TypeInt:
		t = "int64"
	case driver.TypeBool:
		t = "bool"
	case driver.TypeTime:
		t = "time.Time"
	default:
		t = "string"
	}
	if f.Nullable && !f.Primary {
		return "*" + t
	}
	return t
}

// usesTime reports whether any column of tables is a time.
func usesTime(tables []*driver.Table) bool {
	for _, t := range tables {
		for _, c := range t.Columns {
			if c.Field.Type == driver.TypeTime {
				return true
			}
		}
	}
	return false
}

// goLiteral renders a default value as Go source.
func goLiteral(v any) string {
	if s, ok := v.(string); ok {
		return goQuote(s)
	}
	return fmt.Sprint(v)
}

// ormDefault is the default to put in a gorm or bun tag. Both ORMs insert
// a field's tagged default in place of its zero value, which is right for
// a string such as configId ("" means "use the default") and harmless for
// an int defaulting to 0, but would make false impossible to write for a
// bool defaulting to TRUE: such a default stays in the DDL only.
func ormDefault(f driver.Field) (string, bool) {
	if f.Default == nil || (f.Type == driver.TypeBool && !isZeroDefault(f.Default)) {
		return "", false
	}
	return ddl.Literal(f.Default), true
}

// fieldComment is a struct field's comment, with a note when its DDL
// default is left out of the tag (see ormDefault).
func fieldComment(f driver.Field, orm string) string {
	if _, ok := ormDefault(f); f.Default == nil || ok {
		return f.Comment
	}
	note := fmt.Sprintf("The column defaults to %s, but %s writes the field's value even when it is %v: set it on create.", ddl.Literal(f.Default), orm, zeroOf(f))
	return strings.TrimSpace(f.Comment + "\n" + note)
}

// zeroOf is the Go zero value of a field's type, as text.
func zeroOf(f driver.Field) string {
	switch f.Type {
	case driver.TypeBool:
		return "false"
	case driver.TypeInt:
		return "0"
	}
	return `""`
}

// isZeroDefault reports whether a default equals the Go zero value of its
// field, so that leaving the field unset and using the default agree.
func isZeroDefault(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case int:
		return x == 0
	}
	return false
}

// lineComment renders a field or type comment as // lines.
func lineComment(indent, text string) string {
	if text == "" {
		return ""
	}
	return indent + "// " + strings.ReplaceAll(text, "\n", "\n"+indent+"// ") + "\n"
}

// typeDoc is the doc comment of a generated type.
func typeDoc(name string, t *driver.Table, what string) string {
	doc := fmt.Sprintf("%s %s the %s table", name, what, t.Name)
	if t.Comment != "" {
		doc += ": " + t.Comment
	}
	return lineComment("", doc+".")
}
