package operator

import (
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// OpenAPI returns the OpenAPI 3.1 document of the API, as GET
// /openapi.json serves it: built from the routes the handler serves, with
// the schemas of the very types they decode and encode.
func OpenAPI() map[string]any { return openAPI(routes) }

func openAPI(rs []route) map[string]any {
	paths := map[string]any{}
	problem := map[string]any{"application/problem+json": map[string]any{"schema": schemaOf(reflect.TypeFor[Problem]())}}
	for _, rt := range rs {
		op := map[string]any{
			"operationId": rt.id,
			"summary":     rt.summary,
			"security":    []any{map[string]any{"bearer": []any{}}},
		}
		if rt.method == http.MethodGet {
			var params []any
			for i := 0; i < rt.in.NumField(); i++ {
				f := rt.in.Field(i)
				p := map[string]any{"name": f.Tag.Get("query"), "in": "query", "schema": schemaOf(f.Type)}
				if d := f.Tag.Get("doc"); d != "" {
					p["description"] = d
				}
				if strings.HasPrefix(f.Tag.Get("doc"), "required") {
					p["required"] = true
				}
				params = append(params, p)
			}
			if params != nil {
				op["parameters"] = params
			}
		} else {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": schemaOf(rt.in)}}}
		}
		media := "application/json"
		if rt.stream {
			media = "text/event-stream"
		}
		op["responses"] = map[string]any{
			strconv.Itoa(rt.status): map[string]any{"description": "OK", "content": map[string]any{media: map[string]any{"schema": schemaOf(rt.out)}}},
			"default":               map[string]any{"description": "a problem (RFC 9457)", "content": problem},
		}
		item, _ := paths[rt.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		item[strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "sluice operator API",
			"version":     "1",
			"description": "Key management and rate-limit state. Durations are milliseconds (expiresIn: seconds), times RFC 3339.",
		},
		"paths": paths,
		"components": map[string]any{"securitySchemes": map[string]any{
			"bearer": map[string]any{"type": "http", "scheme": "bearer"},
		}},
	}
}

// schemaOf is the JSON Schema of what encoding/json makes of t.
func schemaOf(t reflect.Type) map[string]any {
	if t == reflect.TypeFor[time.Time]() {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if t.Kind() == reflect.Struct && t.PkgPath() == reflect.TypeFor[nullable[int64]]().PkgPath() && strings.HasPrefix(t.Name(), "nullable[") {
		s := schemaOf(t.Field(2).Type)
		s["type"] = []any{s["type"], "null"}
		return s
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := schemaOf(t.Elem())
		if typ, ok := s["type"].(string); ok {
			s["type"] = []any{typ, "null"}
		}
		return s
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Map:
		s := map[string]any{"type": "object"}
		if t.Elem().Kind() != reflect.Interface {
			s["additionalProperties"] = schemaOf(t.Elem())
		}
		return s
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		props := map[string]any{}
		var required []any
		structFields(t, props, &required)
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if required != nil {
			s["required"] = required
		}
		return s
	}
	panic("operator: no schema for " + t.String())
}

// structFields adds t's JSON fields, those of embedded structs inlined.
func structFields(t reflect.Type, props map[string]any, required *[]any) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			structFields(f.Type, props, required)
			continue
		}
		if !f.IsExported() {
			continue
		}
		name, optional, skip := jsonName(f)
		if skip {
			continue
		}
		s := schemaOf(f.Type)
		if d := f.Tag.Get("doc"); d != "" {
			s["description"] = d
		}
		props[name] = s
		if !optional {
			*required = append(*required, name)
		}
	}
}
