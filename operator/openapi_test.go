package operator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/operator"
)

// TestOpenAPIDescribesTheHandler checks the document against the handler
// it comes from: every documented operation is served, the request each
// sends validates against its documented body, and each answer, success
// and problem, against its documented response.
func TestOpenAPIDescribesTheHandler(t *testing.T) {
	e := newEnv(t, backends[0])
	served := e.send(t, "GET", "/openapi.json", "", nil).ok(t)
	var doc map[string]any
	if err := json.Unmarshal([]byte(served.raw), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi %v", doc["openapi"])
	}
	secret, k, err := e.keys.Create(context.Background(), apikey.CreateParams{ReferenceID: "u", Remaining: ptr(int64(100))})
	if err != nil {
		t.Fatal(err)
	}
	reqs := validRequests(k.ID, secret)
	routes := documentedRoutes(t)
	var want []string
	for r := range reqs {
		want = append(want, r)
	}
	slices.Sort(want)
	if !slices.Equal(routes, want) {
		t.Fatalf("documented %v, the tests know %v", routes, want)
	}
	// Deletion last: the others use the key.
	slices.SortStableFunc(routes, func(a, b string) int {
		return boolInt(strings.HasSuffix(a, "/delete")) - boolInt(strings.HasSuffix(b, "/delete"))
	})
	paths := doc["paths"].(map[string]any)
	for _, route := range routes {
		method, path, _ := strings.Cut(route, " ")
		op := paths[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
		responses := op["responses"].(map[string]any)
		body := reqs[route]
		if method == "POST" {
			var v any
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatal(err)
			}
			schema := op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
			if errs := validate(schema, v, "body"); len(errs) > 0 {
				t.Errorf("%s: the request does not match the document: %v", route, errs)
			}
		}
		if path == "/live" {
			checkLive(t, e, responses)
			continue
		}
		target := path
		if method == "GET" {
			target, body = path+body, ""
		}
		r := e.call(t, method, target, body).ok(t)
		var v any
		if err := json.Unmarshal([]byte(r.raw), &v); err != nil {
			t.Fatal(err)
		}
		if errs := validate(responseSchema(responses, "200", "application/json"), v, "answer"); len(errs) > 0 {
			t.Errorf("%s: the answer does not match the document: %v\n%s", route, errs, r.raw)
		}
	}
	// A problem matches the documented default answer.
	p := e.call(t, "POST", "/api-key/create", `{"referenceId":"u","remaining":-1}`)
	var v any
	_ = json.Unmarshal([]byte(p.raw), &v)
	create := paths["/api-key/create"].(map[string]any)["post"].(map[string]any)["responses"].(map[string]any)
	if errs := validate(responseSchema(create, "default", "application/problem+json"), v, "problem"); len(errs) > 0 || p.status != 400 {
		t.Errorf("problem %d %s: %v", p.status, p.raw, errs)
	}
	// A field the document does not know is refused by the handler, and
	// one it says is required is required.
	keyID := fmt.Sprintf(`{"keyId":%d,"frobnicate":1}`, k.ID)
	if r := e.call(t, "POST", "/api-key/reroll", keyID); r.status != 400 || r.str("field") != "frobnicate" {
		t.Errorf("an undocumented field: %d %s", r.status, r.raw)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func responseSchema(responses map[string]any, status, media string) map[string]any {
	return responses[status].(map[string]any)["content"].(map[string]any)[media].(map[string]any)["schema"].(map[string]any)
}

// checkLive reads the first event of GET /live and checks it against the
// documented stream item.
func checkLive(t *testing.T, e *env, responses map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/live", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var v any
			if err := json.Unmarshal([]byte(data), &v); err != nil {
				t.Fatal(err)
			}
			if errs := validate(responseSchema(responses, "200", "text/event-stream"), v, "event"); len(errs) > 0 {
				t.Errorf("GET /live: %v", errs)
			}
			return
		}
	}
	t.Fatalf("GET /live sent no event: %v", sc.Err())
}

// validate checks v against the subset of JSON Schema the document uses:
// type (one or several), properties, required, additionalProperties
// (false or a schema), items and the date-time format.
func validate(s map[string]any, v any, at string) []string {
	var errs []string
	if typ, ok := s["type"]; ok {
		types := []any{typ}
		if many, ok := typ.([]any); ok {
			types = many
		}
		if !slices.ContainsFunc(types, func(t any) bool { return isType(t.(string), v) }) {
			return []string{fmt.Sprintf("%s: %v is not %v", at, v, typ)}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asSlice(s["required"]) {
			if _, ok := x[r.(string)]; !ok {
				errs = append(errs, fmt.Sprintf("%s: %s is required", at, r))
			}
		}
		for name, val := range x {
			if ps, ok := props[name].(map[string]any); ok {
				errs = append(errs, validate(ps, val, at+"."+name)...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					errs = append(errs, fmt.Sprintf("%s: %s is not documented", at, name))
				}
			case map[string]any:
				errs = append(errs, validate(ap, val, at+"."+name)...)
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, it := range x {
				errs = append(errs, validate(items, it, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case string:
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, x); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %q is not a date-time", at, x))
			}
		}
	}
	return errs
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func isType(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	}
	return false
}

// TestOpenAPISchemaFollowsTypes pins a few schemas the generator derives,
// so that a change to the wire types shows in the document.
func TestOpenAPISchemaFollowsTypes(t *testing.T) {
	paths := operator.OpenAPI()["paths"].(map[string]any)
	create := paths["/api-key/create"].(map[string]any)["post"].(map[string]any)
	body := create["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	if !slices.Equal(asSlice(body["required"]), []any{"referenceId"}) {
		t.Errorf("create requires %v, want only referenceId", body["required"])
	}
	out := responseSchema(create["responses"].(map[string]any), "200", "application/json")
	props := out["properties"].(map[string]any)
	if _, ok := props["key"]; !ok {
		t.Error("create's answer does not document the secret")
	}
	if _, ok := props["hash"]; ok {
		t.Error("create's answer documents a hash")
	}
	if typ := props["remaining"].(map[string]any)["type"]; !slices.Equal(asSlice(typ), []any{"integer", "null"}) {
		t.Errorf("remaining is %v, want integer or null", typ)
	}
}
