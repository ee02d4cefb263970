package apikey

import (
	"fmt"
	"reflect"

	"github.com/sluice-go/sluice/core/driver"
)

// checkText is the rule for every string a caller gives a key to store
// (its owner, config id, name and prefix, permissions, metadata keys and
// values, limit names): text that every store keeps byte for byte (see
// driver.StorableText), so that what is read back is what was given, in
// database and storage-only mode alike. A string that breaks it is an
// error wrapping core.ErrInvalid that names the field, before any write.
func checkText(field, s string) error {
	if err := driver.StorableText(s); err != nil {
		return invalidf("%s: %v", field, err)
	}
	return nil
}

// maxTextDepth bounds how deep checkJSONText follows nested values: deeper
// than encoding/json follows before it looks for cycles.
const maxTextDepth = 1000

// checkJSONText applies checkText to every string in v that json.Marshal
// would write (map keys, struct fields, elements), which would otherwise
// rewrite invalid UTF-8 to U+FFFD without a word. field names v; the error
// names the path to the string.
func checkJSONText(field string, v any) error {
	return walkText(field, reflect.ValueOf(v), 0)
}

func walkText(path string, v reflect.Value, depth int) error {
	if depth > maxTextDepth {
		return invalidf("%s nests more than %d levels deep", path, maxTextDepth)
	}
	switch v.Kind() {
	case reflect.String:
		return checkText(path, v.String())
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return walkText(path, v.Elem(), depth+1)
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			k := it.Key()
			name := fmt.Sprint(k.Interface())
			if k.Kind() == reflect.String {
				name = k.String()
				if err := checkText(path+" key", name); err != nil {
					return err
				}
			}
			if err := walkText(fmt.Sprintf("%s[%q]", path, name), it.Value(), depth+1); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // bytes: base64 in JSON
		}
		for i := range v.Len() {
			if err := walkText(fmt.Sprintf("%s[%d]", path, i), v.Index(i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				if err := walkText(path+"."+f.Name, v.Field(i), depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
